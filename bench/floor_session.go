package bench

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The floor hands HandleMessage no session: a tool it runs has no session
// to send through (mcp-go's SendNotificationToClient fails without one), so
// its progress and log messages are lost, and MCPServer skips the work it
// does for a request that has one. A transport that loses nothing gives
// every request a session; on a 2026-07-28 request MCPServer then copies the
// request's client capabilities (and identity, when sent) into it
// (applyRequestProtocolInfoToSession), names the request's in-flight
// cancel by the session's id, and asks it for tools of its own. With
// Options.FloorSession the floor gives each 2026-07-28 request the least
// session that takes all that (floorSession): what MCPServer charges any
// transport that gives a tool somewhere to send, beside what the floor
// measures. Its channel is made on first use and never read: the floor
// still answers JSON only and delivers nothing a tool sends. The floor
// goes by the request's MCP-Protocol-Version header where MCPServer goes
// by the body's _meta (as floorHeaderChecks does); the harness sends both
// alike.

// floorSession is the least server.SessionWithClientInfo: a unique id, a
// notification channel made on first use, the client's information and
// capabilities as MCPServer sets them.
type floorSession struct {
	id   string
	mu   sync.Mutex
	ch   chan mcp.JSONRPCNotification
	info mcp.Implementation
	caps mcp.ClientCapabilities
	init bool
}

var _ server.SessionWithClientInfo = (*floorSession)(nil)

// floorSessionCapacity is the buffer of a floorSession's channel: what a
// tool may send before its sends fail (mcp-go does not block on a full one).
const floorSessionCapacity = 16

// SessionID is the id floorSessions gave the session.
func (f *floorSession) SessionID() string { return f.id }

// NotificationChannel is the session's channel, made on the first call;
// nothing reads it, so a tool's sends fail once it is full.
func (f *floorSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		f.ch = make(chan mcp.JSONRPCNotification, floorSessionCapacity)
	}
	return f.ch
}

// Initialize marks the session initialized (MCPServer does, for a
// 2026-07-28 request, before it runs it).
func (f *floorSession) Initialize() {
	f.mu.Lock()
	f.init = true
	f.mu.Unlock()
}

// Initialized reports whether Initialize has run.
func (f *floorSession) Initialized() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.init
}

// GetClientInfo returns what SetClientInfo last set.
func (f *floorSession) GetClientInfo() mcp.Implementation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.info
}

// SetClientInfo keeps the client's identity (MCPServer sets it from a
// 2026-07-28 request's _meta, when sent).
func (f *floorSession) SetClientInfo(info mcp.Implementation) {
	f.mu.Lock()
	f.info = info
	f.mu.Unlock()
}

// GetClientCapabilities returns what SetClientCapabilities last set.
func (f *floorSession) GetClientCapabilities() mcp.ClientCapabilities {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.caps
}

// SetClientCapabilities keeps the client's capabilities (MCPServer sets
// them from every 2026-07-28 request's _meta).
func (f *floorSession) SetClientCapabilities(caps mcp.ClientCapabilities) {
	f.mu.Lock()
	f.caps = caps
	f.mu.Unlock()
}

// floorSessions makes one floor's sessions: ids unique among that floor's
// requests (each floor has an MCPServer of its own), as MCPServer's
// in-flight cancels need (it keys them by session id and request id).
type floorSessions struct{ next atomic.Uint64 }

// withSession returns ctx carrying a new floorSession for r when r is a
// 2026-07-28 request, else ctx.
func (fs *floorSessions) withSession(ctx context.Context, s *server.MCPServer, r *http.Request) context.Context {
	if !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return ctx
	}
	id := strconv.AppendUint([]byte("floor-"), fs.next.Add(1), 36)
	return s.WithContext(ctx, &floorSession{id: string(id)})
}

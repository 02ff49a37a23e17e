package streamable

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

var _ server.ProtocolVersionSupporter = (*Handler)(nil)

// servedVersions is what a Handler serves: every version mcp-go implements
// that the configured list names (all of them when the list is empty),
// newest first, and of those the session-era ones (initialize handshake).
type servedVersions struct {
	all     []string // newest first; advertised by server/discover
	session []string // all's versions before 2026-07-28, newest first
	// restricted: the list left out a version mcp-go implements, so
	// requests are checked against it and initialize may be renegotiated.
	restricted bool
}

// newServedVersions resolves Config.ProtocolVersions. Versions mcp-go does
// not implement are ignored, each logged at Warn (as mcp-go's own
// SupportsProtocolVersion never matches them); a list naming none that it
// implements would serve nothing and panics, a programming error like New
// with a nil server.
func newServedVersions(list []string, log *slog.Logger) servedVersions {
	var v servedVersions
	for _, want := range list {
		if !mcp.IsValidProtocolVersion(want) {
			log.Warn("lifeline: Config.ProtocolVersions names a protocol version mcp-go does not implement; ignored",
				"version", want, "implemented", strings.Join(mcp.ValidProtocolVersions, ", "))
		}
	}
	for _, known := range mcp.ValidProtocolVersions {
		if len(list) == 0 || slices.Contains(list, known) {
			v.all = append(v.all, known)
		}
	}
	if len(v.all) == 0 {
		panic(fmt.Sprintf("streamable: Config.ProtocolVersions %q names no protocol version mcp-go implements (%s)",
			list, strings.Join(mcp.ValidProtocolVersions, ", ")))
	}
	v.restricted = len(v.all) < len(mcp.ValidProtocolVersions)
	for _, s := range v.all {
		if !mcp.IsModernProtocol(s) {
			v.session = append(v.session, s)
		}
	}
	return v
}

// SupportsProtocolVersion reports whether the handler serves protocol
// version v: one mcp-go implements and Config.ProtocolVersions lists (every
// one when it is empty). It implements mcp-go's
// server.ProtocolVersionSupporter.
func (h *Handler) SupportsProtocolVersion(v string) bool {
	return slices.Contains(h.versions, v)
}

// servesSession reports whether v is a session-era version the handler
// serves.
func (h *Handler) servesSession(v string) bool {
	return slices.Contains(h.served.session, v)
}

// checkProtocolVersion rejects an MCP-Protocol-Version header naming a
// version this handler does not serve on its sessions. A missing header is
// accepted (it means 2025-03-26 to a client that predates the header; a
// session's own version was negotiated by its initialize).
func (h *Handler) checkProtocolVersion(r *http.Request) *failure {
	v := headerValue(r.Header, headerProtocolVersion)
	if v == "" || h.servesSession(v) {
		return nil
	}
	return errUnsupportedVersion(v, h.served.session)
}

// negotiateInitialize makes an initialize request ask for a version the
// handler serves: one naming a session-era version it does not serve (or
// none, which means 2025-03-26, or one it does not know) is rewritten to
// ask for the newest it serves, which mcp-go then answers with; the client
// either goes on with that version or disconnects, as the specification
// has it. Without session-era versions (only 2026-07-28 is served), the
// request is refused (400, the versions served in its data). With every
// version served it costs nothing: mcp-go negotiates itself.
func (h *Handler) negotiateInitialize(env envelope, body []byte) (envelope, []byte, *failure) {
	if !h.served.restricted {
		return env, body, nil
	}
	var params map[string]json.RawMessage
	if len(env.Params) > 0 && json.Unmarshal(env.Params, &params) != nil {
		return env, body, nil // mcp-go answers the malformed params
	}
	// The version asked for is read as mcp-go reads it, into a struct:
	// of keys differing only in case, the last in the text wins (a map's
	// order is random, and would let a client pick one mcp-go ignores).
	var p struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
	}
	var asked string
	if len(env.Params) > 0 && json.Unmarshal(env.Params, &p) == nil {
		_ = json.Unmarshal(p.ProtocolVersion, &asked)
	}
	want := asked
	if want == "" {
		want = mcp.ProtocolVersion20250326
	}
	if h.servesSession(want) {
		return env, body, nil
	}
	if len(h.served.session) == 0 {
		return env, body, errNoSessionVersions(asked, h.versions)
	}
	if params == nil {
		params = make(map[string]json.RawMessage)
	}
	for k := range params {
		if strings.EqualFold(k, "protocolVersion") {
			delete(params, k)
		}
	}
	params["protocolVersion"], _ = json.Marshal(h.served.session[0])
	newParams, err := json.Marshal(params)
	if err != nil {
		return env, body, errInternal("re-encoding initialize params: " + err.Error())
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return env, body, nil // parseEnvelope accepted it: unreachable
	}
	for k := range msg {
		if strings.EqualFold(k, "params") {
			delete(msg, k)
		}
	}
	msg["params"] = newParams
	newBody, err := json.Marshal(msg)
	if err != nil {
		return env, body, errInternal("re-encoding initialize: " + err.Error())
	}
	env.Params = newParams
	return env, newBody, nil
}

package streamable

import (
	"context"

	"github.com/mark3labs/mcp-go/server"
)

// CloseSSEStream ends the SSE response of the request whose handler runs
// with ctx, so that its client reconnects, with a GET carrying the
// Last-Event-ID it got, and is sent the rest of the request's messages and
// its answer from the event log (SSE polling, protocol 2025-11-25). The
// request goes on running: what it sends from now on is recorded, and a
// client that comes back gets it, on any replica that shares the log.
//
// It reports whether the response was ended. It does nothing (false) when
// the response cannot be resumed: no event log, a session that negotiated a
// version before 2025-11-25 (its client is not told when to come back),
// a request of a batch, a 2026-07-28 request, or a request that has
// already returned. It waits at most the write timeout for the response to
// end.
func CloseSSEStream(ctx context.Context) bool {
	rs, ok := server.ClientSessionFromContext(ctx).(*requestSession)
	if !ok || rs.post == nil || !rs.post.resumable || !primes(rs.ProtocolVersion()) {
		return false
	}
	return rs.post.releaseNow(ctx)
}

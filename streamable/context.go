package streamable

import (
	"context"
	"net/http"

	"github.com/mark3labs/mcp-go/server"
)

// headerKey is the context key of the request's headers.
type headerKey struct{}

// RequestHeader returns the HTTP headers of the request being handled, in
// the context that tools, resources, prompts and hooks receive, on every
// protocol version. mcp-go keeps its own header key unexported, so under
// any transport but its own CallToolRequest.Header stays empty; use this
// instead. It returns nil outside a request served by lifeline.
func RequestHeader(ctx context.Context) http.Header {
	h, _ := ctx.Value(headerKey{}).(http.Header)
	return h
}

// requestContext is the context for handling r's message: its headers are
// reachable through RequestHeader, and Config.ContextFunc has been applied.
func (h *Handler) requestContext(ctx context.Context, r *http.Request) context.Context {
	ctx = context.WithValue(ctx, headerKey{}, r.Header)
	if h.cfg.ContextFunc != nil {
		ctx = h.cfg.ContextFunc(ctx, r)
	}
	return ctx
}

// OnSessionStream returns ctx with the request it runs in replaced by its
// session, for a tool that sends something unrelated to that request. What
// mcp-go sends through the returned context (SendNotificationToClient,
// RequestSampling, RequestElicitation, RequestRoots) then goes on the
// session's standalone GET stream, on whichever replica holds it, instead of
// on the request's own response. The request's cancellation still applies.
// Outside a request served by lifeline (or in stateless mode, which has no
// GET stream) it returns ctx unchanged.
func OnSessionStream(ctx context.Context, srv *server.MCPServer) context.Context {
	rs, ok := server.ClientSessionFromContext(ctx).(*requestSession)
	if !ok || rs.stateless {
		return ctx
	}
	return srv.WithContext(ctx, rs.session)
}

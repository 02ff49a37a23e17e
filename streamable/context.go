package streamable

import (
	"context"
	"net/http"
)

// headerKey is the context key of the request's headers.
type headerKey struct{}

// RequestHeader returns the HTTP headers of the request being handled, in
// the context that tools, resources, prompts and hooks receive. mcp-go keeps
// its own header key unexported, so under any transport but its own
// CallToolRequest.Header stays empty (lifeline fills it only on 2026-07-28
// requests, which mcp-go's handler serves); use this instead. It returns
// nil outside a request served by lifeline.
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

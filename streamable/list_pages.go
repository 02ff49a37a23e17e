package streamable

import (
	"context"
	"crypto/rand"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// maxListPages bounds the pages listPages reads.
const maxListPages = 100

// listPages runs the list method through the MCPServer with ctx, page by
// page (at most maxListPages), handing each result to visit until visit
// reports it is done, and returns whether it was. It is how lifeline reads
// what mcp-go exports only through a list method (resource templates, task
// tools): the MCPServer's hooks for the method see these calls, under an id
// no client uses (mcp-go files each request it runs under its session and
// id, to cancel it, and a client's request with the same id would lose its
// place).
func (h *Handler) listPages(ctx context.Context, method mcp.MCPMethod, visit func(result any) (done bool, next mcp.Cursor)) bool {
	id := mcp.NewRequestId("lifeline-" + string(method) + "-" + rand.Text())
	cursor := mcp.Cursor("")
	for range maxListPages {
		msg, err := json.Marshal(mcp.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION,
			ID:      id,
			Request: mcp.Request{Method: string(method)},
			Params:  mcp.PaginatedParams{Cursor: cursor},
		})
		if err != nil {
			return false
		}
		resp, ok := h.mcp.HandleMessage(ctx, msg).(mcp.JSONRPCResponse)
		if !ok {
			return false
		}
		done, next := visit(resp.Result)
		if done {
			return true
		}
		if next == "" {
			return false
		}
		cursor = next
	}
	return false
}

package streamable

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// appendResponseJSON appends msg, a message HandleMessage returned,
// encoded exactly as json.Marshal encodes it. A result (mcp.JSONRPCResponse)
// is written without reflection over its envelope (while mcp-go's types
// are the ones it was written for: knownCallTool), and a tools/call result
// (mcp.CallToolResult) by appendCallToolResult, without the second pass over
// it that encoding/json makes to compact a Marshaler's output. Anything
// else, and any value that does not encode, goes through json.Marshal,
// whose bytes or error it returns.
func appendResponseJSON(b []byte, msg mcp.JSONRPCMessage) ([]byte, error) {
	r, ok := msg.(mcp.JSONRPCResponse)
	if !ok || !knownCallTool {
		return appendMarshalled(b, msg)
	}
	out := append(b, `{"jsonrpc":`...)
	out = appendJSONString(out, r.JSONRPC)
	out = append(out, `,"id":`...)
	out, err := appendJSONValue(out, r.ID.Value())
	if err == nil {
		out = append(out, `,"result":`...)
		out, err = appendResult(out, r.Result)
	}
	if err != nil {
		return appendMarshalled(b, msg) // json.Marshal's own error, wrapped as it wraps it
	}
	return append(out, '}'), nil
}

// appendResult appends a response's result as json.Marshal encodes it: a
// tools/call result by appendCallToolResult, anything else, or a result
// it declines (a value that does not encode, an mcp-go it was not written
// for), by json.Marshal. The result is not copied to the heap.
func appendResult(b []byte, result any) ([]byte, error) {
	var out []byte
	ok := false
	switch res := result.(type) {
	case mcp.CallToolResult:
		out, ok = appendCallToolResult(b, &res)
	case *mcp.CallToolResult:
		if res != nil {
			out, ok = appendCallToolResult(b, res)
		}
	}
	if ok {
		return out, nil
	}
	return appendMarshalled(b, result)
}

// appendMarshalled appends json.Marshal's encoding of v.
func appendMarshalled(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, out...), nil
}

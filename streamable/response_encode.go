package streamable

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// appendResponseJSON appends msg, a message HandleMessage returned,
// encoded exactly as json.Marshal encodes it. A result (mcp.JSONRPCResponse)
// is written without reflection over its envelope, and a tools/call result
// (mcp.CallToolResult, whose MarshalJSON is json.Marshal's own output:
// compact, valid, HTML-escaped) is written as its MarshalJSON returns it,
// without the second pass over it that encoding/json makes to compact a
// Marshaler's output. Anything else, and any value that does not encode,
// goes through json.Marshal, whose bytes or error it returns.
func appendResponseJSON(b []byte, msg mcp.JSONRPCMessage) ([]byte, error) {
	r, ok := msg.(mcp.JSONRPCResponse)
	if !ok {
		return appendMarshalled(b, msg)
	}
	var result []byte
	var err error
	switch res := r.Result.(type) {
	case mcp.CallToolResult:
		result, err = res.MarshalJSON()
	case *mcp.CallToolResult:
		if res == nil {
			return appendMarshalled(b, msg)
		}
		result, err = res.MarshalJSON()
	default:
		result, err = json.Marshal(r.Result)
	}
	if err != nil {
		return appendMarshalled(b, msg) // json.Marshal's own error, wrapped as it wraps it
	}
	out := append(b, `{"jsonrpc":`...)
	out = appendJSONString(out, r.JSONRPC)
	out = append(out, `,"id":`...)
	if out, err = appendJSONValue(out, r.ID.Value()); err != nil {
		return appendMarshalled(b, msg)
	}
	out = append(out, `,"result":`...)
	out = append(out, result...)
	return append(out, '}'), nil
}

// appendMarshalled appends json.Marshal's encoding of v.
func appendMarshalled(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, out...), nil
}

package streamable

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
)

// encodeNotificationJSON returns n encoded exactly as json.Marshal encodes
// it (mcp-go's NotificationParams.MarshalJSON: the params' members sorted,
// "_meta" from Meta only), without reflection for the members requests
// send most (strings, numbers, booleans, null): a progress notification
// costs a fraction of json.Marshal's time, and on a writer goroutine's
// fresh stack none of the stack growth that json.Marshal's recursion
// makes. Other values go through json.Marshal, whose error it returns.
func encodeNotificationJSON(n mcp.JSONRPCNotification) ([]byte, error) {
	b := make([]byte, 0, 160)
	b = append(b, `{"jsonrpc":`...)
	b = appendJSONString(b, n.JSONRPC)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, n.Method)
	p := n.Params
	if p.Meta == nil && p.AdditionalFields == nil {
		return append(b, '}'), nil // params is omitzero
	}
	var buf [8]string
	keys := buf[:0]
	if p.Meta != nil {
		keys = append(keys, "_meta")
	}
	for k := range p.AdditionalFields {
		if k != "_meta" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b = append(b, `,"params":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var v any = p.Meta
		if k != "_meta" {
			v = p.AdditionalFields[k]
		}
		var err error
		if b, err = appendJSONValue(b, v); err != nil {
			return nil, err
		}
	}
	return append(b, "}}"...), nil
}

// appendJSONValue appends v as json.Marshal encodes it.
func appendJSONValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendJSONString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case float64:
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return appendJSONFloat(b, x), nil
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// appendJSONString appends s quoted as json.Marshal quotes it: directly
// when every byte is printable ASCII that needs no escape (json.Marshal
// escapes quotes, backslashes and, for HTML, <, > and &), else through
// json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			out, _ := json.Marshal(s) // a string always encodes
			return append(b, out...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat appends a finite f as json.Marshal encodes a float64:
// the shortest decimal that round-trips, in exponent form below 1e-6 and
// from 1e21, with a one-digit negative exponent written without its zero.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

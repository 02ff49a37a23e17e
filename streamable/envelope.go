package streamable

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// envelope is what the transport reads of a JSON-RPC message to route it.
// Its raw members alias the request body.
type envelope struct {
	JSONRPC string
	ID      json.RawMessage
	Method  string
	Params  json.RawMessage
	Result  json.RawMessage
	Error   json.RawMessage
}

// parseEnvelope checks that body is one well-formed JSON-RPC message and
// reads the members routing needs. It validates the whole body but decodes
// only those members (the MCPServer decodes the message itself), matching
// member names as encoding/json does: exactly or else case-insensitively,
// the last of duplicates winning.
func parseEnvelope(body []byte) (envelope, *failure) {
	var env envelope
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return env, errParse("the request body is empty")
	}
	if trimmed[0] == '[' {
		return env, errInvalidMessage("a JSON-RPC message is a JSON object, not an array (batches do not nest)")
	}
	var top topMembers
	if !validJSON(trimmed, &top) {
		// Decoded again only to say what is wrong.
		var v any
		err := json.Unmarshal(trimmed, &v)
		if err == nil { // unreachable: Valid and Unmarshal agree
			return env, errParse("the body is not valid JSON")
		}
		return env, errParse("the body is not a JSON-RPC message: " + err.Error())
	}
	if trimmed[0] != '{' {
		return env, errInvalidMessage("a JSON-RPC message is a JSON object")
	}
	var f *failure
	if top.over {
		f = env.read(trimmed)
	} else {
		f = env.readMembers(trimmed, &top)
	}
	if f != nil {
		return env, f
	}
	if env.JSONRPC != mcp.JSONRPC_VERSION {
		return env, errInvalidMessage(`"jsonrpc" must be "2.0"`)
	}
	if string(env.ID) == "null" {
		env.ID = nil
	}
	if len(env.ID) > 0 && !validIDValue(env.ID) {
		// JSON-RPC 2.0: an id is a string or a number (or null). Not
		// echoed: an answer carrying it is no answer a client can match.
		env.ID = nil
		return env, errInvalidMessage(`"id" must be a string or a number`)
	}
	if env.Method == "" && (len(env.ID) == 0 || (len(env.Result) == 0 && len(env.Error) == 0)) {
		return env, errInvalidMessage("a message needs a method, or an id with a result or an error")
	}
	return env, nil
}

// read fills env from obj, a valid JSON object.
func (env *envelope) read(obj []byte) *failure {
	var f *failure
	eachMember(obj, func(key, value []byte) bool {
		f = env.set(key, value)
		return f == nil
	})
	return f
}

// readMembers fills env from obj, a valid JSON object whose members
// validJSON recorded in top.
func (env *envelope) readMembers(obj []byte, top *topMembers) *failure {
	for _, m := range top.m[:top.n] {
		if f := env.set(obj[m.key:m.keyEnd], obj[m.value:m.valueEnd]); f != nil {
			return f
		}
	}
	return nil
}

// eachMember calls fn with the key (a JSON string, quoted) and the value of
// each member of obj, a valid JSON object, in order, until fn returns
// false.
func eachMember(obj []byte, fn func(key, value []byte) bool) {
	for i := 1; ; {
		i = skipSpace(obj, i)
		if obj[i] == '}' {
			return
		}
		keyEnd := skipString(obj, i)
		key := obj[i:keyEnd]
		i = skipSpace(obj, keyEnd) + 1 // past ':'
		i = skipSpace(obj, i)
		valEnd := skipValue(obj, i)
		if !fn(key, obj[i:valEnd]) {
			return
		}
		i = skipSpace(obj, valEnd)
		if obj[i] == ',' {
			i++
		}
	}
}

// set stores value, a valid JSON value, in the member named by key, a JSON
// string; a member routing does not need is ignored.
func (env *envelope) set(key, value []byte) *failure {
	name := unquote(key)
	switch field := memberField(name); field {
	case "jsonrpc":
		if string(value) == `"2.0"` {
			env.JSONRPC = mcp.JSONRPC_VERSION // without a copy
			return nil
		}
		return setString(&env.JSONRPC, value, `"jsonrpc" must be "2.0"`)
	case "method":
		if value[0] == '"' {
			env.Method = methodName(unquote(value))
			return nil
		}
		return setString(&env.Method, value, `"method" must be a string`)
	case "id":
		env.ID = value
	case "params":
		env.Params = value
	case "result":
		env.Result = value
	case "error":
		env.Error = value
	}
	return nil
}

// memberField returns the envelope field a member name selects, as
// encoding/json decides it for a struct (the exact name, or else one equal
// under Unicode case folding), or "" for none.
func memberField(name []byte) string {
	var candidates []string
	switch len(name) {
	case 2:
		candidates = []string{"id"}
	case 5:
		candidates = []string{"error"}
	case 6:
		candidates = []string{"method", "params", "result"}
	default:
		// Any other length may still fold to a field: folding the long s
		// (U+017F) to "s" changes a name's length ("paramſ" is 7 bytes).
		candidates = envelopeFields[:]
	}
	for _, f := range candidates {
		if string(name) == f {
			return f
		}
	}
	for _, f := range candidates {
		if bytes.EqualFold(name, []byte(f)) {
			return f
		}
	}
	return ""
}

// envelopeFields are the members parseEnvelope reads.
var envelopeFields = [...]string{"jsonrpc", "method", "id", "params", "result", "error"}

// methodName returns b as a string, without a copy for the methods
// clients send most.
func methodName(b []byte) string {
	switch string(b) {
	case string(mcp.MethodToolsCall):
		return string(mcp.MethodToolsCall)
	case string(mcp.MethodToolsList):
		return string(mcp.MethodToolsList)
	case string(mcp.MethodPing):
		return string(mcp.MethodPing)
	case string(mcp.MethodInitialize):
		return string(mcp.MethodInitialize)
	case "notifications/initialized":
		return "notifications/initialized"
	case string(mcp.MethodResourcesRead):
		return string(mcp.MethodResourcesRead)
	case string(mcp.MethodPromptsGet):
		return string(mcp.MethodPromptsGet)
	}
	return string(b)
}

// setString stores a JSON string value in *dst; null leaves it as it is
// (as encoding/json does), anything else is the invalid-message failure
// saying what.
func setString(dst *string, value []byte, what string) *failure {
	switch value[0] {
	case 'n':
		return nil
	case '"':
		*dst = string(unquote(value))
		return nil
	}
	return errInvalidMessage(what)
}

// unquote returns the characters of s, a valid JSON string, as
// encoding/json decodes them (invalid UTF-8 becomes U+FFFD).
func unquote(s []byte) []byte {
	inner := s[1 : len(s)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	var out string
	if err := json.Unmarshal(s, &out); err != nil {
		return inner // unreachable for a valid string
	}
	return []byte(out)
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the JSON string starting at i.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the valid JSON value starting at i.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// validIDValue reports whether id, a valid JSON value, is one JSON-RPC 2.0
// allows as a request id other than null: a string or a number.
func validIDValue(id json.RawMessage) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9'))
}

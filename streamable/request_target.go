package streamable

import (
	"bytes"
	"encoding/json"
)

// requestTarget is what telemetry reads of a request's params: the tool or
// prompt it names, the resource it reads and the W3C trace context its
// _meta carries (the MCP conventions' place for it).
type requestTarget struct {
	name, uri               string
	traceParent, traceState string
}

// readTarget reads params, a valid JSON value (parseEnvelope validated the
// whole message), without decoding the rest of it: a tool's arguments are
// skipped, not parsed. Members match as encoding/json matches struct
// fields (exactly, else case-insensitively, the last duplicate winning);
// a member that is not a string is ignored.
func readTarget(params json.RawMessage) requestTarget {
	var t requestTarget
	if len(params) == 0 || params[0] != '{' {
		return t
	}
	eachMember(params, func(key, value []byte) bool {
		name := unquote(key)
		switch {
		case memberIs(name, "name"):
			setTargetString(&t.name, value)
		case memberIs(name, "uri"):
			setTargetString(&t.uri, value)
		case memberIs(name, "_meta") && value[0] == '{':
			eachMember(value, func(key, value []byte) bool {
				name := unquote(key)
				switch {
				case memberIs(name, "traceparent"):
					setTargetString(&t.traceParent, value)
				case memberIs(name, "tracestate"):
					setTargetString(&t.traceState, value)
				}
				return true
			})
		}
		return true
	})
	return t
}

// memberIs reports whether a member name selects field, as encoding/json
// decides it: the exact name or one equal under case folding.
func memberIs(name []byte, field string) bool {
	return string(name) == field || bytes.EqualFold(name, []byte(field))
}

// setTargetString stores value in *dst when it is a JSON string.
func setTargetString(dst *string, value []byte) {
	if value[0] == '"' {
		*dst = string(unquote(value))
	}
}

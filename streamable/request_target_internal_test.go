package streamable

import (
	"encoding/json"
	"testing"
)

// stdTarget is what readTarget reads, as encoding/json decodes it.
type stdTarget struct {
	Name string `json:"name"`
	URI  string `json:"uri"`
	Meta struct {
		TraceParent string `json:"traceparent"`
		TraceState  string `json:"tracestate"`
	} `json:"_meta"`
}

var targetSeeds = []string{
	`{"name":"echo","arguments":{"name":"not this","_meta":{"traceparent":"nor this"}}}`,
	`{"uri":"file:///a","_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"a=b"}}`,
	`{"NAME":"upper","Name":"mixed"}`,
	`{"name":"first","name":"last"}`,
	`{"name":7,"uri":null,"_meta":"no"}`,
	`{"_meta":{"traceparent":"x"},"_meta":{"tracestate":"y"}}`,
	`{"name":"\u00e9\ud800 esc\"aped"}`,
	`{"naſe":"long s","nam\u0065":"escaped key"}`,
	` { "name" : "spaced" , "uri" : "u" } `,
	`{}`, `[]`, `"s"`, `null`, `3`,
}

// readTarget reads what encoding/json would: the same fields, with the
// same member matching, ignoring a member of the wrong type.
func TestReadTargetMatchesEncodingJSON(t *testing.T) {
	for _, s := range targetSeeds {
		checkTarget(t, []byte(s))
	}
}

func FuzzReadTarget(f *testing.F) {
	for _, s := range targetSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			return // parseEnvelope refuses the message first
		}
		checkTarget(t, params)
	})
}

func checkTarget(t *testing.T, params []byte) {
	t.Helper()
	var want stdTarget
	_ = json.Unmarshal(params, &want) // a type error still fills the other fields
	got := readTarget(trimSpaceRaw(params))
	if got.name != want.Name || got.uri != want.URI || got.traceParent != want.Meta.TraceParent || got.traceState != want.Meta.TraceState {
		t.Fatalf("%q:\n got %+v\nwant %+v", params, got, want)
	}
}

// trimSpaceRaw is params as parseEnvelope hands it on: a member's value,
// with no space around it.
func trimSpaceRaw(params []byte) json.RawMessage {
	i, j := skipSpace(params, 0), len(params)
	for j > i && (params[j-1] == ' ' || params[j-1] == '\t' || params[j-1] == '\n' || params[j-1] == '\r') {
		j--
	}
	return params[i:j]
}

package streamable

import (
	"bytes"
	"encoding/json"
	"testing"
)

// stdEnvelope is the envelope as encoding/json decodes it: the oracle for
// parseEnvelope's own reading of the members.
type stdEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	` {"jsonrpc" : "2.0" , "id" : "a\"b" , "method" : "ping" } `,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"}]{["}]}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"no"}}`,
	`{"JSONRPC":"2.0","Method":"ping","ID":3}`,
	`{"jsonrpc":"2.0","method":"a","method":"b","id":1}`,
	`{"jsonrpc":"2.0","METHOD":"a","method":"b","Method":"c"}`,
	`{"jsonrpc":"2.0","m\u0065thod":"esc\u00e9\n","id":-1.5e3}`,
	`{"jsonrpc":null,"method":null}`,
	`{"jsonrpc":"2.0","method":"x","params":[1,"]",{"a":[{}]}],"extra":true,"id":false}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{}`,
	`{"a":{"b":{"c":"\\"}}}`,
	`{"jsonrpc":"2.0","ſ":1,"method":"K"}`,
	`{"jſonrpc":"2.0","meThod":"x"}`,
	`{"jsonrpc":"2.0","method":"x","paramſ":{"a":1},"reſult":2,"ERROR":3,"Id":4}`,
	`{"jsonrpc":"2.0","id":1,"method":1}`,
	`{"jsonrpc":2,"id":1,"method":"x"}`,
	`[1]`, `null`, `"x"`, `12`, `{"a":1`, `{"a":1}}`, `hello`, ``,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"jsonrpc":"2.0","method":"ping","id":9}`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"jsonrpc":"2.0","method":"ping"}`,
}

// FuzzParseEnvelope checks parseEnvelope against encoding/json: on every
// body encoding/json decodes into the envelope, parseEnvelope reads the
// same members; on every body that is not valid JSON it answers a parse
// error; it never panics.
func FuzzParseEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		env, fail := parseEnvelope(body)
		trimmed := bytes.TrimSpace(body)
		checkRecordedMembersRead(t, trimmed)
		if !json.Valid(trimmed) {
			if fail == nil {
				t.Fatalf("%q: invalid JSON accepted", body)
			}
			return
		}
		var want stdEnvelope
		if err := json.Unmarshal(trimmed, &want); err != nil || trimmed[0] != '{' {
			// Not an object, or a member of the wrong type (encoding/json
			// calls it a type error): refused either way.
			if fail == nil {
				t.Fatalf("%q: accepted, but encoding/json says %v", body, err)
			}
			return
		}
		// Read the members directly, before parseEnvelope's checks.
		var got envelope
		if f := got.read(trimmed); f != nil {
			t.Fatalf("%q: read failed: %v", body, f.message)
		}
		if got.JSONRPC != want.JSONRPC || got.Method != want.Method ||
			!rawEqual(got.ID, want.ID) || !rawEqual(got.Params, want.Params) ||
			!rawEqual(got.Result, want.Result) || !rawEqual(got.Error, want.Error) {
			t.Fatalf("%q:\n got %+v\nwant %+v", body, got, want)
		}
		// parseEnvelope reads the members validJSON recorded: the walk's.
		if fail == nil && (env.JSONRPC != got.JSONRPC || env.Method != got.Method ||
			!rawEqual(env.Params, got.Params) || !rawEqual(env.Result, got.Result) || !rawEqual(env.Error, got.Error)) {
			t.Fatalf("%q:\nparseEnvelope %+v\n    the walk %+v", body, env, got)
		}
		if fail == nil && (env.JSONRPC != "2.0" || (env.Method == "" && len(env.ID) == 0)) {
			t.Fatalf("%q: accepted an envelope that is not a message: %+v", body, env)
		}
	})
}

func rawEqual(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

// checkRecordedMembersRead checks that reading a valid object's members
// from what validJSON recorded (readMembers, parseEnvelope's way) gives
// what the walk gives (read): the same fields, the same failure.
func checkRecordedMembersRead(t *testing.T, obj []byte) {
	t.Helper()
	var top topMembers
	if !validJSON(obj, &top) || obj[0] != '{' || top.over {
		return
	}
	var fromSpans, walked envelope
	f1, f2 := fromSpans.readMembers(obj, &top), walked.read(obj)
	if (f1 == nil) != (f2 == nil) || fromSpans.JSONRPC != walked.JSONRPC || fromSpans.Method != walked.Method ||
		!rawEqual(fromSpans.ID, walked.ID) || !rawEqual(fromSpans.Params, walked.Params) ||
		!rawEqual(fromSpans.Result, walked.Result) || !rawEqual(fromSpans.Error, walked.Error) {
		t.Fatalf("%q:\nfrom the recorded members %+v (failure %v)\n            the walk %+v (failure %v)",
			obj, fromSpans, f1 != nil, walked, f2 != nil)
	}
}

// A message with more members than validJSON records (routed members
// after the eighth) is read by the walk, and served.
func TestParseEnvelopeReadsPastTheRecordedMembers(t *testing.T) {
	body := []byte(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"jsonrpc":"2.0","method":"ping","id":9}`)
	env, f := parseEnvelope(body)
	if f != nil {
		t.Fatalf("refused: %s", f.message)
	}
	if env.Method != "ping" || string(env.ID) != "9" || env.JSONRPC != "2.0" {
		t.Fatalf("read %+v", env)
	}
	for _, s := range envelopeSeeds {
		if b := bytes.TrimSpace([]byte(s)); len(b) > 0 {
			checkRecordedMembersRead(t, b)
		}
	}
}

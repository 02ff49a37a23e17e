package streamable

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzSetMember: for any JSON object, setMember's result is a JSON object
// holding the new value under the name (in no other case) and, for every
// other member, what encoding/json read from the input.
func FuzzSetMember(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"protocolVersion":"x","ProtocolVersion":"y","z":[1,{"q":2}]}`,
		`{"id":1,"ID":2,"params":{"a":1},"Params":null}`, `{"par\u0061ms":1,"a":"\u00e9"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var before map[string]json.RawMessage
		if json.Unmarshal([]byte(in), &before) != nil || before == nil {
			return
		}
		out, err := setMember([]byte(in), "params", json.RawMessage(`{"v":1}`))
		if err != nil {
			t.Fatalf("setMember(%q): %v", in, err)
		}
		var after map[string]json.RawMessage
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("setMember(%q) = %q: not a JSON object: %v", in, out, err)
		}
		if string(after["params"]) != `{"v":1}` {
			t.Fatalf("setMember(%q) = %q: params %s", in, out, after["params"])
		}
		for k, v := range before {
			if strings.EqualFold(k, "params") {
				continue
			}
			if string(after[k]) != string(v) {
				t.Fatalf("setMember(%q) = %q: member %q changed from %s to %s", in, out, k, v, after[k])
			}
		}
		for k := range after {
			if strings.EqualFold(k, "params") && k != "params" {
				t.Fatalf("setMember(%q) = %q: kept %q", in, out, k)
			}
		}
	})
}

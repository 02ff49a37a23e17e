package streamable

import (
	"encoding/json"
	"strings"
	"testing"
)

var validJSONSeeds = []string{
	``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `-12.5e10`, `1.e3`, `.5`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `"`, `""`, `"\"`, `"\u00e9"`, `"\u00g9"`,
	`"\u12"`, `"\x"`, "\"a\tb\"", "\"\xff\xfe\"", `"\/\b\f\n\r\t"`,
	`{}`, `{ }`, `[]`, `[ ]`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{,}`, `[1,]`, `[,1]`,
	`[1 2]`, `{"a":1 "b":2}`, `{"a":[1,{"b":[]}],"c":{}}`, `[}`, `{]`, `{"a":1]`, `[[]]]`,
	`{"a":1}}`, `{"a":1} x`, " \t\r\n{}\n", "\v{}", `{1:2}`, `[true,false,null,"x",-1.5e3]`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
}

// FuzzValidJSON checks validJSON against encoding/json's Valid: they
// answer alike on every input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONSeeds {
		f.Add([]byte(s))
	}
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// TestValidJSONDepthIsEncodingJSONs checks the nesting bound at its edge,
// for arrays, objects and empty containers.
func TestValidJSONDepthIsEncodingJSONs(t *testing.T) {
	nest := func(depth int, open, inner, close string) []byte {
		return []byte(strings.Repeat(open, depth-1) + inner + strings.Repeat(close, depth-1))
	}
	for _, c := range []struct{ name, open, inner, close string }{
		{"arrays", "[", "[1]", "]"},
		{"empty arrays", "[", "[]", "]"},
		{"objects", `{"a":`, `{"b":1}`, "}"},
		{"empty objects", `{"a":`, `{}`, "}"},
	} {
		for _, depth := range []int{1, 63, 64, 65, maxJSONDepth - 1, maxJSONDepth, maxJSONDepth + 1} {
			b := nest(depth, c.open, c.inner, c.close)
			if got, want := validJSON(b), json.Valid(b); got != want {
				t.Errorf("%s nested %d deep: validJSON = %v, encoding/json says %v", c.name, depth, got, want)
			}
		}
	}
	if validJSON(nest(maxJSONDepth+1, "[", "[]", "]")) {
		t.Errorf("arrays nested %d deep accepted", maxJSONDepth+1)
	}
}

// BenchmarkValidJSON compares validJSON with encoding/json's Valid on a
// tools/call request.
func BenchmarkValidJSON(b *testing.B) {
	body := []byte(validJSONSeeds[len(validJSONSeeds)-1])
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			validJSON(body)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(body)
		}
	})
}

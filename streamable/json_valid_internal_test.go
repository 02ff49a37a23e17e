package streamable

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"slices"
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
	`{"a":{},"b":[],"c":"x","d":-1.5,"e":true,"f":null,"g":[{}],"h":{"i":[1]}}`,
	// Strings long enough to be read a word at a time (stringEnd): a byte
	// to look at at the start, the end and inside a word, and in the tail
	// read a byte at a time (TestSpecialBytesIsEachBytesLook tries every
	// place).
	`"abcdefghijklmnopqrstuvwxyz"`, `"abcdefg\\hijklmnop"`, `"abcdefgh\"ijklmnop"`, `"abcdefghi\u00e9jk"`,
	"\"abcdefghij\x1fklmnop\"", "\"abcdefghijk\x7fl\xc3\xa9mnop\xff\"", `"abcdefghijkl`, `"abcdefghijklmnop\`,
	`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}`, ` { "a" : [ 1 , 2 ] , "b" : { } } `,
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
		if got, want := validJSON(b, nil), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
		checkTopMembers(t, b)
	})
}

// checkTopMembers checks what validJSON records of a valid object's
// members against eachMember's walk of it: the same keys and values, in
// order, unless there are more than it records (over).
func checkTopMembers(t *testing.T, b []byte) {
	t.Helper()
	var top topMembers
	valid := validJSON(b, &top)
	trimmed := bytes.TrimSpace(b)
	if !valid || trimmed[0] != '{' {
		if valid && top.n != 0 {
			t.Fatalf("%q is not an object, yet %d members were recorded", b, top.n)
		}
		return
	}
	var want [][2]string
	eachMember(trimmed, func(key, value []byte) bool {
		want = append(want, [2]string{string(key), string(value)})
		return true
	})
	if top.over != (len(want) > maxTopMembers) {
		t.Fatalf("%q: %d members, over = %v", b, len(want), top.over)
	}
	if top.over {
		return
	}
	// The spans index into b as given, whitespace around it included:
	// parseEnvelope hands validJSON the trimmed body.
	got := make([][2]string, 0, top.n)
	for _, m := range top.m[:top.n] {
		got = append(got, [2]string{string(b[m.key:m.keyEnd]), string(b[m.value:m.valueEnd])})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%q: recorded members %q, the walk finds %q", b, got, want)
	}
}

// TestTopMembersAreTheWalks checks the recorded members on the seeds,
// whatever the fuzzing engine does.
func TestTopMembersAreTheWalks(t *testing.T) {
	for _, s := range append(validJSONSeeds, envelopeSeeds...) {
		checkTopMembers(t, []byte(s))
	}
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
			if got, want := validJSON(b, nil), json.Valid(b); got != want {
				t.Errorf("%s nested %d deep: validJSON = %v, encoding/json says %v", c.name, depth, got, want)
			}
		}
	}
	if validJSON(nest(maxJSONDepth+1, "[", "[]", "]"), nil) {
		t.Errorf("arrays nested %d deep accepted", maxJSONDepth+1)
	}
}

// specialBytes finds in a word what a look at each of its bytes would:
// every byte value in every place, beside every other byte value (a
// borrow out of one byte's test must not hide the next's), the first
// special byte marked first, none marked when there is none.
func TestSpecialBytesIsEachBytesLook(t *testing.T) {
	special := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	for place := range 7 {
		for c := range 256 {
			for d := range 256 {
				w := []byte("abcdefgh")
				w[place], w[place+1] = byte(c), byte(d)
				want := -1
				if first := slices.IndexFunc(w, special); first >= 0 {
					want = first
				}
				got := -1
				if m := specialBytes(binary.LittleEndian.Uint64(w)); m != 0 {
					got = bits.TrailingZeros64(m) / 8
				}
				if got != want {
					t.Fatalf("specialBytes(%q) marks byte %d first, want %d (-1: none)", w, got, want)
				}
			}
		}
	}
}

// BenchmarkValidJSON compares validJSON with encoding/json's Valid on a
// tools/call request.
func BenchmarkValidJSON(b *testing.B) {
	body := []byte(validJSONSeeds[len(validJSONSeeds)-1])
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			validJSON(body, nil)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(body)
		}
	})
}

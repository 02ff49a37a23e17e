package streamable

import (
	"bytes"
	"encoding/json"
	"testing"
)

// soleMemberSeeds are params bodies where a one-walk read and encoding/json
// could part: duplicates, keys that differ only in case or fold (the long s
// folds to s), keys and values with escapes, null and values of other
// types, params that are no object, invalid UTF-8.
var soleMemberSeeds = []string{
	`{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`,
	`{}`, `null`, `[]`, `[{"name":"a"}]`, `"name"`, `5`, `true`, ` { "name" : "a" } `,
	`{"name":"a","name":"b"}`, `{"name":"a","name":5}`, `{"name":"a","name":null}`, `{"name":5}`, `{"name":null}`,
	`{"Name":"a"}`, `{"NAME":"a","name":"b"}`, `{"name":"b","NAME":"a"}`, `{"na\u006de":"a"}`, `{"name":"a\"b\u00e9"}`,
	"{\"name\":\"a\xffb\"}", `{"uri":"file:///x","name":"n"}`, `{"URI":"u"}`, `{"uri":{"a":1}}`, `{"uri":["x"]}`,
	`{"_meta":null}`, `{"_meta":5}`, `{"_meta":[]}`, `{"_meta":"x"}`, `{"_META":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_meta":{}}`,
	`{"_meta":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":5}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`,
	`{"_meta":{"IO.modelcontextprotocol/PROTOCOLVERSION":"2026-07-28"}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVerſion":"2026-07-28"}}`,
	`{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}`,
	`{"\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28"}}`,
	`{"arguments":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"inner"}}`,
}

// FuzzMetaVersionAndName checks readParams and nameInParams against
// encoding/json's decoding (decodedMetaVersion, decodedName: what eraOf and
// checkStandardHeaders read before the one-walk read) on every valid JSON
// value: the one-walk read changes no answer.
func FuzzMetaVersionAndName(f *testing.F) {
	for _, s := range soleMemberSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			t.Skip("params reach these reads validated")
		}
		meta, name, uri, named := readParams(params)
		if want := decodedMetaVersion(params); meta != want {
			t.Fatalf("readParams(%q)'s version %q, encoding/json decodes %q", params, meta, want)
		}
		if named {
			if got, want := stringValue(name), decodedName(params, "name"); got != want {
				t.Fatalf("readParams(%q)'s name %q, encoding/json decodes %q", params, got, want)
			}
			if got, want := stringValue(uri), decodedName(params, "uri"); got != want {
				t.Fatalf("readParams(%q)'s uri %q, encoding/json decodes %q", params, got, want)
			}
		}
		for _, field := range []string{"name", "uri"} {
			if got, want := nameInParams(params, field), decodedName(params, field); got != want {
				t.Fatalf("nameInParams(%q, %q) = %q, encoding/json decodes %q", params, field, got, want)
			}
		}
	})
}

// TestSoleMemberWalksTheCommonCase checks that the requests clients send
// are read in the one walk, not handed to encoding/json (which would still
// answer alike, at the cost this read saves).
func TestSoleMemberWalksTheCommonCase(t *testing.T) {
	params := []byte(soleMemberSeeds[0])
	meta, ok := soleMember(params, "_meta")
	if !ok || meta == nil {
		t.Fatalf("soleMember(_meta) = %q, %v", meta, ok)
	}
	if v, ok := soleString(meta, "io.modelcontextprotocol/protocolVersion"); !ok || v != "2026-07-28" {
		t.Errorf("the version: %q, %v", v, ok)
	}
	if v, ok := soleString(params, "name"); !ok || v != "echo" {
		t.Errorf("the name: %q, %v", v, ok)
	}
	if meta, name, _, named := readParams(params); !named || meta != "2026-07-28" || stringValue(name) != "echo" {
		t.Errorf("readParams: %q, %q, named %v", meta, name, named)
	}
	for _, s := range []string{`{"name":"a","name":"b"}`, `{"Name":"a"}`, `{"na\u006de":"a"}`} {
		if _, ok := soleString([]byte(s), "name"); ok {
			t.Errorf("soleString(%s) read in one walk; encoding/json must decide", s)
		}
	}
}

// mayFold never rules out a key bytes.EqualFold would match: on every
// pair of a few keys, ASCII and not, and the names the reads ask for.
func TestMayFoldNeverRulesOutAMatch(t *testing.T) {
	names := []string{"_meta", "name", "uri", "io.modelcontextprotocol/protocolVersion", "Name", "k", "s", "ſ", "\u212A", ""}
	keys := []string{"", "_meta", "_META", "name", "NAME", "nAmE", "uri", "URI", "ſ", "K", "k", "S", "ſname",
		"\u212ame", "IO.MODELCONTEXTPROTOCOL/PROTOCOLVERSION", "io.modelcontextprotocol/protocolVerſion", "x", "é"}
	for _, k := range keys {
		for _, n := range names {
			if bytes.EqualFold([]byte(k), []byte(n)) && !mayFold([]byte(k), n) {
				t.Errorf("mayFold(%q, %q) = false, but the two fold alike", k, n)
			}
		}
	}
	if mayFold([]byte("arguments"), "name") || mayFold([]byte("_meta"), "uri") {
		t.Error("mayFold did not rule out keys that start with another ASCII letter")
	}
}

// FuzzMayFold holds mayFold to bytes.EqualFold: it may say true where they
// differ, never false where they fold alike.
func FuzzMayFold(f *testing.F) {
	f.Add([]byte("ſ"), "s")
	f.Add([]byte("Kelvin"), "kelvin")
	f.Fuzz(func(t *testing.T, key []byte, name string) {
		if bytes.EqualFold(key, []byte(name)) && !mayFold(key, name) {
			t.Fatalf("mayFold(%q, %q) = false, but the two fold alike", key, name)
		}
	})
}

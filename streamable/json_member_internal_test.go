package streamable

import (
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

// FuzzMetaVersionAndName checks metaVersion and nameInParams against
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
		if got, want := metaVersion(params), decodedMetaVersion(params); got != want {
			t.Fatalf("metaVersion(%q) = %q, encoding/json decodes %q", params, got, want)
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
	for _, s := range []string{`{"name":"a","name":"b"}`, `{"Name":"a"}`, `{"na\u006de":"a"}`} {
		if _, ok := soleString([]byte(s), "name"); ok {
			t.Errorf("soleString(%s) read in one walk; encoding/json must decide", s)
		}
	}
}

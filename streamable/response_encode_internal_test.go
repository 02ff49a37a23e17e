package streamable

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// responseCases are HandleMessage answers whose encoding must be
// json.Marshal's byte for byte: tools/call results by value and by
// pointer (text, structured, error, _meta as 2026-07-28 answers carry
// it), other results, ids of every kind, strings that need escapes, and
// the messages that are not results.
func responseCases() []mcp.JSONRPCMessage {
	resp := func(id any, result any) mcp.JSONRPCMessage {
		return mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Result: result}
	}
	text := mcp.NewToolResultText("hello")
	escaped := mcp.NewToolResultText("<b>&\"quoted\"\\ \n\t\u2028 é \x01")
	structured := mcp.NewToolResultStructured(map[string]any{"b": 2, "a": []any{"x", 1.5, nil}}, "fallback")
	failed := mcp.NewToolResultError("it broke")
	modern := mcp.NewToolResultText("hi")
	modern.Meta = mcp.NewMetaFromMap(map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "s", "version": "1"}})
	modern.ResultType = "complete"
	var nilResult *mcp.CallToolResult
	return append([]mcp.JSONRPCMessage{
		resp(int64(2), *text),
		resp(int64(2), text),
		resp("req-<1>", *escaped),
		resp(1.5, structured),
		resp(int64(-7), *failed),
		resp("7", modern),
		resp(nil, *text),
		resp(int64(3), nilResult),
		resp(int64(4), nil),
		resp(int64(5), mcp.ListToolsResult{Tools: []mcp.Tool{mcp.NewTool("echo", mcp.WithString("text"))}}),
		resp(int64(6), map[string]any{"z": 1, "a": "<&>"}),
		resp(int64(8), json.RawMessage(`{ "raw" : [1, 2] }`)),
		resp("\u00e9\u2029", mcp.EmptyResult{}),
		mcp.JSONRPCResponse{JSONRPC: "<odd \"version\">", ID: mcp.NewRequestId(int64(10)), Result: *text},
		mcp.NewJSONRPCError(mcp.NewRequestId(int64(9)), mcp.INVALID_PARAMS, "bad <params>", nil),
		mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: "notifications/progress"}},
	}, toolResultCases()...)
}

// toolResultCases are tools/call results with each member
// appendCallToolResult writes, and each it leaves to json.Marshal.
func toolResultCases() []mcp.JSONRPCMessage {
	var out []mcp.JSONRPCMessage
	add := func(r *mcp.CallToolResult) {
		out = append(out, mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(len(out))), Result: *r})
	}
	withMeta := func(meta *mcp.Meta) *mcp.CallToolResult {
		r := mcp.NewToolResultText("t")
		r.Meta = meta
		return r
	}
	add(&mcp.CallToolResult{}) // no content: an empty array
	add(&mcp.CallToolResult{Content: []mcp.Content{}})
	add(withMeta(&mcp.Meta{}))
	add(withMeta(&mcp.Meta{ProgressToken: "p<1>"}))
	add(withMeta(&mcp.Meta{ProgressToken: int64(3), AdditionalFields: map[string]any{"progressToken": "wins", "a": 1.5}}))
	add(withMeta(&mcp.Meta{ProgressToken: 2.5, AdditionalFields: map[string]any{"z": nil, "b": true, "<k>": []any{1, "x"}, "é": map[string]any{"n": 1}}}))
	add(withMeta(mcp.NewMetaFromMap(map[string]any{"io.modelcontextprotocol/serverInfo": mcp.Implementation{Name: "s<&>", Version: "1\n"}})))
	add(withMeta(mcp.NewMetaFromMap(map[string]any{"io.modelcontextprotocol/serverInfo": mcp.Implementation{Name: "s", Version: "1", Title: "T", WebsiteURL: "https://x"}})))
	add(withMeta(mcp.NewMetaFromMap(map[string]any{"io.modelcontextprotocol/serverInfo": &mcp.Implementation{Name: "ptr", Version: "1"}})))
	annotated := mcp.NewTextContent("annotated")
	annotated.Annotations = &mcp.Annotations{Priority: ptrTo(0.5)}
	textMeta := mcp.NewTextContent("with meta")
	textMeta.Meta = &mcp.Meta{AdditionalFields: map[string]any{"k": "v"}}
	textPtr := mcp.NewTextContent("pointer")
	add(&mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("a"), annotated, textMeta, &textPtr,
		mcp.NewImageContent("aGk=", "image/png"), mcp.TextContent{Type: "odd\u2028", Text: "\x00<>&\"\\"}}})
	add(&mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("e")}, IsError: true})
	mrtr := mcp.NewToolResultText("more")
	mrtr.ResultType = mcp.ResultTypeInputRequired
	mrtr.RequestState = "state <opaque>"
	mrtr.InputRequests = mcp.InputRequests{"b": mcp.NewRootsInputRequest(), "a": mcp.NewElicitationInputRequest(mcp.ElicitationParams{Message: "<why>"})}
	add(mrtr)
	raw := mcp.NewToolResultText("raw")
	raw.RawStructuredContent = json.RawMessage(`{ "b" : "<x>", "a" : [ 1 , 2 ] }`)
	raw.StructuredContent = map[string]any{"ignored": true}
	add(raw)
	add(mcp.NewToolResultStructuredOnly(struct {
		N int    `json:"n"`
		S string `json:"s"`
	}{1, "<s>"}))
	modern := mcp.NewToolResultStructured(map[string]any{"x": 1}, "x")
	modern.ResultType = mcp.ResultTypeComplete
	modern.Meta = mcp.NewMetaFromMap(map[string]any{"io.modelcontextprotocol/serverInfo": mcp.Implementation{Name: "bench", Version: "1.0.0"}})
	add(modern)
	return out
}

func ptrTo[T any](v T) *T { return &v }

func TestAppendResponseJSONIsJSONMarshal(t *testing.T) {
	if !knownCallTool {
		t.Fatal("mcp-go's tools/call result types are not the ones appendCallToolResult knows: update it, and knownCallTool, for them")
	}
	for i, m := range responseCases() {
		want, werr := json.Marshal(m)
		got, gerr := appendResponseJSON([]byte("prefix"), m)
		if werr != nil || gerr != nil || !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("case %d (%T):\n got %s (%v)\nwant prefix%s (%v)", i, m, got, gerr, want, werr)
		}
	}
}

// TestAppendCallToolResultIsMarshalJSON: every tools/call result that
// encodes is written by appendCallToolResult itself, as MarshalJSON
// writes it.
func TestAppendCallToolResultIsMarshalJSON(t *testing.T) {
	for i, m := range toolResultCases() {
		r := m.(mcp.JSONRPCResponse).Result.(mcp.CallToolResult)
		want, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		got, ok := appendCallToolResult([]byte("prefix"), &r)
		if !ok || !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("case %d: appendCallToolResult gave %s (%v)\nwant prefix%s", i, got, ok, want)
		}
	}
}

// TestAppendResponseJSONRefusesWhatMarshalRefuses: a result, or an id,
// that json.Marshal cannot encode gives its error, and leaves the bytes
// before it as they were.
func TestAppendResponseJSONRefusesWhatMarshalRefuses(t *testing.T) {
	for i, m := range []mcp.JSONRPCMessage{
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Result: math.Inf(1)},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(math.NaN()), Result: mcp.NewToolResultText("x")},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)),
			Result: mcp.NewToolResultStructured(map[string]any{"f": math.NaN()}, "x")},
	} {
		_, werr := json.Marshal(m)
		got, gerr := appendResponseJSON([]byte("prefix"), m)
		if werr == nil || gerr == nil || gerr.Error() != werr.Error() || string(got) != "prefix" {
			t.Errorf("case %d: got %q, %v; json.Marshal's error %v", i, got, gerr, werr)
		}
	}
	var unsupported *json.UnsupportedValueError
	if _, err := appendResponseJSON(nil, mcp.JSONRPCResponse{ID: mcp.NewRequestId(int64(1)), Result: math.NaN()}); !errors.As(err, &unsupported) {
		t.Errorf("a NaN result: %v, want json's UnsupportedValueError", err)
	}
}

// FuzzAppendResponseJSON checks the encoding against json.Marshal for a
// tools/call result of fuzzed text under a fuzzed string or number id,
// with a string id also in its _meta as a key and a server's name.
func FuzzAppendResponseJSON(f *testing.F) {
	f.Add("hello", "id-1", 7.0, true)
	f.Add("<\u2028\x00\xff&", "\"", -1e21, false)
	f.Fuzz(func(t *testing.T, text, sid string, nid float64, stringID bool) {
		var id any = nid
		if stringID {
			id = sid
		} else if nid == math.Trunc(nid) && math.Abs(nid) < 1<<53 {
			id = int64(nid)
		}
		result := mcp.NewToolResultText(text)
		if stringID {
			result.Meta = mcp.NewMetaFromMap(map[string]any{sid: text, "io.modelcontextprotocol/serverInfo": mcp.Implementation{Name: sid, Version: text}})
		}
		m := mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Result: result}
		want, werr := json.Marshal(m)
		got, gerr := appendResponseJSON(nil, m)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Errorf("got %s (%v)\nwant %s (%v)", got, gerr, want, werr)
		}
	})
}

// BenchmarkEncodeResponse compares appendResponseJSON with what
// respondJSON did before it (an Encoder over the whole message), for a
// tools/call answer of the session era and one of 2026-07-28 (with the
// _meta mcp-go adds).
func BenchmarkEncodeResponse(b *testing.B) {
	plain := mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(2)), Result: mcp.NewToolResultText("hello")}
	modernResult := mcp.NewToolResultText("hello")
	modernResult.Meta = mcp.NewMetaFromMap(map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "bench", "version": "1"}})
	modernResult.ResultType = "complete"
	modern := mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(2)), Result: modernResult}
	for _, c := range []struct {
		name string
		msg  mcp.JSONRPCMessage
	}{{"session-era", plain}, {"2026-07-28", modern}} {
		var buf bytes.Buffer
		b.Run(c.name+"/encoder", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				_ = json.NewEncoder(&buf).Encode(c.msg)
			}
		})
		b.Run(c.name+"/append", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				enc, _ := appendResponseJSON(buf.AvailableBuffer(), c.msg)
				buf.Write(append(enc, '\n'))
			}
		})
		if strings.Count(buf.String(), "\n") != 1 {
			b.Fatalf("encoded %q", buf.String())
		}
	}
}

// TestKnownCallToolGuard: the guard tells a type that encodes itself, and
// a layout other than the one written down, from the ones it knows.
func TestKnownCallToolGuard(t *testing.T) {
	if !marshalsItself[mcp.Meta]() || !marshalsItself[mcp.RequestId]() || !marshalsItself[mcp.CallToolResult]() {
		t.Error("a type with MarshalJSON (on its pointer or its value) is not seen to encode itself")
	}
	if marshalsItself[mcp.TextContent]() || marshalsItself[mcp.Implementation]() {
		t.Error("a plain struct is seen to encode itself")
	}
	if layoutIs[mcp.Annotated](`Annotations *mcp.Annotations json:"annotations"; `) {
		t.Error("a tag other than the one written down passes")
	}
	if !layoutIs[mcp.Annotated](`Annotations *mcp.Annotations json:"annotations,omitempty"; `) {
		t.Error("the layout written down does not pass")
	}
}

// TestAppendResponseJSONAllocatesNothing: a text tools/call answer, its
// result by pointer (as mcp-go returns it) or by value, and the
// 2026-07-28 form of it (resultType, the server's identity in _meta), is
// encoded into a buffer that holds it without an allocation: nothing is
// copied to the heap on the way.
func TestAppendResponseJSONAllocatesNothing(t *testing.T) {
	text := mcp.NewToolResultText("hello")
	modern := mcp.NewToolResultText("hello") // as mcp-go decorates a 2026-07-28 answer
	modern.ResultType = mcp.ResultTypeComplete
	modern.Meta = mcp.NewMetaFromMap(map[string]any{"io.modelcontextprotocol/serverInfo": mcp.Implementation{Name: "bench", Version: "1.0.0"}})
	for _, result := range []any{text, *text, modern} {
		msg := mcp.JSONRPCMessage(mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(2)), Result: result})
		buf := make([]byte, 0, 512)
		if n := testing.AllocsPerRun(100, func() { _, _ = appendResponseJSON(buf, msg) }); n != 0 {
			t.Errorf("result %T: %v allocations a call", result, n)
		}
	}
}

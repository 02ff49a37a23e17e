package everything_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/internal/everything"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait in these tests.
const wait = 10 * time.Second

// session serves a fresh everything server on lifeline's transport over
// real HTTP and returns an initialized client of it. The transport is shut
// down and the listener closed when the test ends.
func session(t *testing.T) (*testutil.Client, context.Context) {
	t.Helper()
	h := streamable.New(everything.NewServer(), streamable.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = h.Shutdown(ctx)
		ts.Close()
	})
	ctx := testutil.Context(t, wait)
	c := testutil.NewClient(ts.URL)
	c.HTTP = ts.Client()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c, ctx
}

// call sends a request and returns the whole answer, failing the test
// unless it is a 200 whose last message is a result.
func call(t *testing.T, ctx context.Context, c *testutil.Client, method string, params any) (*testutil.Response, json.RawMessage) {
	t.Helper()
	resp, err := c.Call(ctx, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", method, resp.Status, resp.Body)
	}
	m, err := resp.Last()
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if m.Error != nil {
		t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	return resp, m.Result
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// content is one content block of a tool result or prompt message.
type content struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MIMEType string `json:"mimeType"`
	Resource *struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text"`
	} `json:"resource"`
}

type toolResult struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError"`
}

func callTool(t *testing.T, ctx context.Context, c *testutil.Client, name string, args map[string]any) toolResult {
	t.Helper()
	_, raw := call(t, ctx, c, "tools/call", map[string]any{"name": name, "arguments": args})
	return decode[toolResult](t, raw)
}

func TestToolsList(t *testing.T) {
	c, ctx := session(t)
	_, raw := call(t, ctx, c, "tools/list", nil)
	list := decode[struct {
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}](t, raw)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s: description %q, inputSchema %v: both are required", tool.Name, tool.Description, tool.InputSchema)
		}
		if tool.Name != everything.ToolJSONSchema202012 {
			continue
		}
		s := tool.InputSchema
		defs, _ := s["$defs"].(map[string]any)
		if s["$schema"] != everything.JSONSchemaDraft202012 || defs["address"] == nil || s["additionalProperties"] != false {
			t.Errorf("%s: 2020-12 keywords not preserved: %v", tool.Name, s)
		}
		// SEP-2106: composition, conditional and anchor keywords.
		address, _ := defs["address"].(map[string]any)
		allOf, _ := s["allOf"].([]any)
		if len(allOf) != 1 || s["if"] == nil || s["then"] == nil || s["else"] == nil || address["$anchor"] != "addressDef" {
			t.Errorf("%s: SEP-2106 keywords not preserved: %v", tool.Name, s)
		} else if first, _ := allOf[0].(map[string]any); first["anyOf"] == nil {
			t.Errorf("%s: allOf lacks its anyOf: %v", tool.Name, allOf)
		}
	}
	for _, want := range []string{
		everything.ToolSimpleText, everything.ToolImageContent, everything.ToolAudioContent,
		everything.ToolEmbeddedResource, everything.ToolMultipleContent, everything.ToolWithLogging,
		everything.ToolWithProgress, everything.ToolErrorHandling, everything.ToolSampling,
		everything.ToolElicitation, everything.ToolElicitationSEP1034, everything.ToolElicitationSEP1330Enums,
		everything.ToolJSONSchema202012, everything.ToolReconnection,
		everything.ToolMissingCapability, everything.ToolStreamingElicit, everything.ToolLoggingTool,
		everything.ToolTriggerToolChange, everything.ToolTriggerPromptChange, everything.ToolHeaderParam,
		everything.ToolInputElicitation, everything.ToolInputSampling, everything.ToolInputListRoots,
		everything.ToolInputRequestState, everything.ToolInputMultipleInputs, everything.ToolInputMultiRound,
		everything.ToolInputTamperedState, everything.ToolInputCapabilities,
	} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s; it has %v", want, names)
		}
	}
}

func TestContentTools(t *testing.T) {
	c, ctx := session(t)

	if r := callTool(t, ctx, c, everything.ToolSimpleText, nil); len(r.Content) != 1 || r.Content[0].Text != everything.SimpleText {
		t.Errorf("%s: %+v", everything.ToolSimpleText, r)
	}

	img := callTool(t, ctx, c, everything.ToolImageContent, map[string]any{})
	if len(img.Content) != 1 || img.Content[0].Type != "image" || img.Content[0].MIMEType != "image/png" {
		t.Fatalf("%s: %+v", everything.ToolImageContent, img)
	}
	pngBytes, err := base64.StdEncoding.DecodeString(img.Content[0].Data)
	if err != nil {
		t.Fatalf("image data is not base64: %v", err)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(pngBytes)); err != nil || cfg.Width != 1 || cfg.Height != 1 {
		t.Errorf("image is not a 1x1 PNG: %+v, %v", cfg, err)
	}

	audio := callTool(t, ctx, c, everything.ToolAudioContent, map[string]any{})
	wav, _ := base64.StdEncoding.DecodeString(audio.Content[0].Data)
	if audio.Content[0].Type != "audio" || audio.Content[0].MIMEType != "audio/wav" ||
		!bytes.HasPrefix(wav, []byte("RIFF")) || string(wav[8:12]) != "WAVE" {
		t.Errorf("%s: %+v (%d bytes)", everything.ToolAudioContent, audio, len(wav))
	}

	emb := callTool(t, ctx, c, everything.ToolEmbeddedResource, map[string]any{})
	if r := emb.Content[0].Resource; emb.Content[0].Type != "resource" || r == nil ||
		r.URI == "" || r.MIMEType != "text/plain" || r.Text != everything.EmbeddedText {
		t.Errorf("%s: %+v", everything.ToolEmbeddedResource, emb)
	}

	mixed := callTool(t, ctx, c, everything.ToolMultipleContent, map[string]any{})
	var types []string
	for _, b := range mixed.Content {
		types = append(types, b.Type)
	}
	if !slices.Equal(types, []string{"text", "image", "resource"}) {
		t.Errorf("%s: content types %v, want text, image, resource", everything.ToolMultipleContent, types)
	}

	if r := callTool(t, ctx, c, everything.ToolErrorHandling, map[string]any{}); !r.IsError ||
		len(r.Content) != 1 || r.Content[0].Text != everything.ErrorHandlingText {
		t.Errorf("%s: %+v, want an isError result with its message", everything.ToolErrorHandling, r)
	}
}

// TestNotificationsOnCallStream checks that log and progress notifications
// travel, in order, on the call's own SSE response before its result, and
// that log messages respect logging/setLevel.
func TestNotificationsOnCallStream(t *testing.T) {
	c, ctx := session(t)

	// At the default level (error) the info messages are not sent.
	resp, _ := call(t, ctx, c, "tools/call", map[string]any{"name": everything.ToolWithLogging})
	if len(resp.Messages) != 1 {
		t.Errorf("before setLevel: %d messages, want only the result: %+v", len(resp.Messages), resp.Messages)
	}

	call(t, ctx, c, "logging/setLevel", map[string]any{"level": "debug"})
	resp, _ = call(t, ctx, c, "tools/call", map[string]any{"name": everything.ToolWithLogging})
	var logs []string
	for _, m := range resp.Messages[:len(resp.Messages)-1] {
		p := decode[struct {
			Level string `json:"level"`
			Data  string `json:"data"`
		}](t, m.Params)
		if m.Method != "notifications/message" || p.Level != "info" {
			t.Errorf("unexpected message before the result: %s %s", m.Method, m.Params)
		}
		logs = append(logs, p.Data)
	}
	if want := []string{everything.LogStarted, everything.LogProcessing, everything.LogCompleted}; !resp.IsSSE() || !slices.Equal(logs, want) {
		t.Errorf("logs %q (SSE %v), want %q on the call's SSE response", logs, resp.IsSSE(), want)
	}

	resp, _ = call(t, ctx, c, "tools/call", map[string]any{
		"name": everything.ToolWithProgress, "_meta": map[string]any{"progressToken": "tok-1"},
	})
	var progress []float64
	for _, m := range resp.Messages[:len(resp.Messages)-1] {
		p := decode[struct {
			Token    string  `json:"progressToken"`
			Progress float64 `json:"progress"`
			Total    float64 `json:"total"`
		}](t, m.Params)
		if m.Method != "notifications/progress" || p.Token != "tok-1" || p.Total != everything.ProgressTotal {
			t.Errorf("unexpected message before the result: %s %s", m.Method, m.Params)
		}
		progress = append(progress, p.Progress)
	}
	if !slices.Equal(progress, []float64{0, 50, 100}) {
		t.Errorf("progress %v, want 0, 50, 100", progress)
	}
}

// clientRequest calls tool on an SSE stream, expects it to send the client
// a request of method, answers it with result, and returns the request's
// params and the tool's result.
func clientRequest(t *testing.T, ctx context.Context, c *testutil.Client, tool string, args map[string]any,
	method string, result any) (json.RawMessage, toolResult) {
	t.Helper()
	st, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	defer st.Close()
	req, err := st.NextMessage(ctx)
	if err != nil || !req.IsRequest() || req.Method != method {
		t.Fatalf("%s: first message %+v (%v), want a %s request", tool, req, err, method)
	}
	if ack, err := c.Reply(ctx, req.ID, result); err != nil || ack.Status != http.StatusAccepted {
		t.Fatalf("%s: reply: %+v, %v", tool, ack, err)
	}
	resp, err := st.NextMessage(ctx)
	if err != nil || resp.Error != nil {
		t.Fatalf("%s: response %+v, %v", tool, resp, err)
	}
	return req.Params, decode[toolResult](t, resp.Result)
}

func TestSampling(t *testing.T) {
	c, ctx := session(t)
	params, res := clientRequest(t, ctx, c, everything.ToolSampling, map[string]any{"prompt": "say hi"},
		"sampling/createMessage", map[string]any{
			"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "hi"},
		})
	p := decode[struct {
		MaxTokens int `json:"maxTokens"`
		Messages  []struct {
			Role    string  `json:"role"`
			Content content `json:"content"`
		} `json:"messages"`
	}](t, params)
	if p.MaxTokens != everything.SamplingMaxTokens || len(p.Messages) != 1 ||
		p.Messages[0].Role != "user" || p.Messages[0].Content.Text != "say hi" {
		t.Errorf("sampling request %s", params)
	}
	if res.IsError || res.Content[0].Text != "LLM response: hi" {
		t.Errorf("result %+v", res)
	}
}

func TestElicitation(t *testing.T) {
	c, ctx := session(t)

	params, res := clientRequest(t, ctx, c, everything.ToolElicitationSEP1034, nil, "elicitation/create",
		map[string]any{"action": "accept", "content": map[string]any{"name": "Jane", "age": 25}})
	props := decode[struct {
		Schema struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"requestedSchema"`
	}](t, params).Schema.Properties
	defaults := map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true}
	for field, want := range defaults {
		if got := props[field]["default"]; got != want {
			t.Errorf("field %s: default %v, want %v", field, got, want)
		}
	}
	if want := `Elicitation completed: action=accept, content={"age":25,"name":"Jane"}`; res.Content[0].Text != want {
		t.Errorf("result %q, want %q", res.Content[0].Text, want)
	}

	params, res = clientRequest(t, ctx, c, everything.ToolElicitationSEP1330Enums, nil, "elicitation/create",
		map[string]any{"action": "decline"})
	if !strings.Contains(string(params), `"enumNames"`) || !strings.Contains(string(params), `"anyOf"`) {
		t.Errorf("enum schema lacks the legacy or titled multi-select form: %s", params)
	}
	if res.Content[0].Text != "Elicitation completed: action=decline, content={}" {
		t.Errorf("result %q", res.Content[0].Text)
	}
}

func TestResources(t *testing.T) {
	c, ctx := session(t)
	type contents struct {
		Contents []struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Text     string `json:"text"`
			Blob     string `json:"blob"`
		} `json:"contents"`
	}
	read := func(uri string) contents {
		_, raw := call(t, ctx, c, "resources/read", map[string]any{"uri": uri})
		return decode[contents](t, raw)
	}
	if r := read("test://static-text"); r.Contents[0].Text != everything.StaticText || r.Contents[0].MIMEType != "text/plain" {
		t.Errorf("static text: %+v", r)
	}
	if r := read("test://static-binary"); r.Contents[0].Blob == "" || r.Contents[0].MIMEType != "image/png" {
		t.Errorf("static binary: %+v", r)
	}
	r := read("test://template/123/data")
	doc := decode[map[string]any](t, json.RawMessage(r.Contents[0].Text))
	if r.Contents[0].URI != "test://template/123/data" || doc["id"] != "123" || doc["templateTest"] != true {
		t.Errorf("template read: %+v", r)
	}
	for _, method := range []string{"resources/subscribe", "resources/unsubscribe"} {
		if _, raw := call(t, ctx, c, method, map[string]any{"uri": everything.ResourceWatched}); string(raw) != "{}" {
			t.Errorf("%s: result %s, want {}", method, raw)
		}
	}
}

func TestPromptsAndCompletion(t *testing.T) {
	c, ctx := session(t)
	type messages struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content content `json:"content"`
		} `json:"messages"`
	}
	get := func(name string, args map[string]string) messages {
		_, raw := call(t, ctx, c, "prompts/get", map[string]any{"name": name, "arguments": args})
		return decode[messages](t, raw)
	}
	if m := get(everything.PromptSimple, nil); len(m.Messages) != 1 || m.Messages[0].Content.Text != everything.SimplePromptText {
		t.Errorf("simple prompt: %+v", m)
	}
	m := get(everything.PromptWithArguments, map[string]string{"arg1": "one", "arg2": "two"})
	if want := "Prompt with arguments: arg1='one', arg2='two'"; m.Messages[0].Content.Text != want {
		t.Errorf("prompt with arguments: %q, want %q", m.Messages[0].Content.Text, want)
	}
	m = get(everything.PromptEmbeddedResource, map[string]string{"resourceUri": "test://x"})
	if r := m.Messages[0].Content.Resource; r == nil || r.URI != "test://x" {
		t.Errorf("embedded resource prompt: %+v", m)
	}
	if m = get(everything.PromptWithImage, nil); m.Messages[0].Content.Type != "image" || m.Messages[0].Content.Data == "" {
		t.Errorf("image prompt: %+v", m)
	}

	_, raw := call(t, ctx, c, "completion/complete", map[string]any{
		"ref":      map[string]any{"type": "ref/prompt", "name": everything.PromptWithArguments},
		"argument": map[string]any{"name": "arg1", "value": "tes"},
	})
	got := decode[struct {
		Completion struct {
			Values []string `json:"values"`
		} `json:"completion"`
	}](t, raw).Completion.Values
	if !slices.Equal(got, []string{"test", "testValue1", "testing"}) {
		t.Errorf("completion of arg1 %q: %q", "tes", got)
	}
}

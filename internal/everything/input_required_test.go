package everything_test

import (
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/internal/everything"
)

func TestInputRequiredElicitation(t *testing.T) {
	c, ctx := modernClient(t)
	tool := everything.ToolInputElicitation
	ask := map[string]string{everything.InputUserName: "elicitation/create"}

	wantInputRequired(t, "round 1", callInput(t, ctx, c, tool, nil, allCaps), ask)

	r := callInput(t, ctx, c, tool, map[string]any{"inputResponses": map[string]any{
		everything.InputUserName: accept(map[string]any{"name": "Alice"}),
	}}, allCaps)
	wantComplete(t, "round 2", r)
	if r.text() != "Hello, Alice!" {
		t.Errorf("round 2: %q, want the greeting", r.text())
	}

	// Unknown keys are ignored next to the answer.
	r = callInput(t, ctx, c, tool, map[string]any{"inputResponses": map[string]any{
		everything.InputUserName: accept(map[string]any{"name": "Bob"}),
		"unknown_extra_key":      accept(map[string]any{"foo": "bar"}),
	}}, allCaps)
	if wantComplete(t, "extra keys", r); r.text() != "Hello, Bob!" {
		t.Errorf("extra keys: %q", r.text())
	}

	// A missing, declined or malformed answer is asked for again.
	for what, responses := range map[string]any{
		"wrong key":      map[string]any{"wrong_key": accept(map[string]any{"data": "wrong"})},
		"declined":       map[string]any{everything.InputUserName: map[string]any{"action": "decline"}},
		"not an object":  map[string]any{everything.InputUserName: 12345},
		"name not text":  map[string]any{everything.InputUserName: accept(map[string]any{"name": 5})},
		"null responses": nil,
	} {
		wantInputRequired(t, what, callInput(t, ctx, c, tool, map[string]any{"inputResponses": responses}, allCaps), ask)
	}
}

func TestInputRequiredSamplingAndRoots(t *testing.T) {
	c, ctx := modernClient(t)

	r := callInput(t, ctx, c, everything.ToolInputSampling, nil, allCaps)
	wantInputRequired(t, "sampling round 1", r, map[string]string{everything.InputCapital: "sampling/createMessage"})
	if p := decode[struct {
		MaxTokens int `json:"maxTokens"`
		Messages  []struct {
			Content content `json:"content"`
		} `json:"messages"`
	}](t, r.InputRequests[everything.InputCapital].Params); p.MaxTokens != 100 || len(p.Messages) != 1 ||
		p.Messages[0].Content.Text != "What is the capital of France?" {
		t.Errorf("sampling request %s", r.InputRequests[everything.InputCapital].Params)
	}
	r = callInput(t, ctx, c, everything.ToolInputSampling, map[string]any{"inputResponses": map[string]any{
		everything.InputCapital: sampled("Paris"),
	}}, allCaps)
	if wantComplete(t, "sampling round 2", r); r.text() != "LLM response: Paris" {
		t.Errorf("sampling round 2: %q", r.text())
	}

	wantInputRequired(t, "roots round 1", callInput(t, ctx, c, everything.ToolInputListRoots, nil, allCaps),
		map[string]string{everything.InputRoots: "roots/list"})
	r = callInput(t, ctx, c, everything.ToolInputListRoots, map[string]any{"inputResponses": map[string]any{
		everything.InputRoots: roots("file:///test/root"),
	}}, allCaps)
	if wantComplete(t, "roots round 2", r); !strings.Contains(r.text(), "file:///test/root") {
		t.Errorf("roots round 2: %q does not name the root", r.text())
	}
}

func TestInputRequiredRequestState(t *testing.T) {
	c, ctx := modernClient(t)
	confirm := map[string]any{everything.InputConfirm: accept(map[string]any{"ok": true})}
	for _, tool := range []string{everything.ToolInputRequestState, everything.ToolInputTamperedState} {
		r1 := callInput(t, ctx, c, tool, nil, allCaps)
		wantInputRequired(t, tool+" round 1", r1, map[string]string{everything.InputConfirm: "elicitation/create"})
		if r1.RequestState == "" {
			t.Fatalf("%s: round 1 carries no requestState", tool)
		}

		r2 := callInput(t, ctx, c, tool, map[string]any{"inputResponses": confirm, "requestState": r1.RequestState}, allCaps)
		if wantComplete(t, tool+" round 2", r2); !strings.Contains(r2.text(), everything.StateOK) {
			t.Errorf("%s round 2: %q lacks %s", tool, r2.text(), everything.StateOK)
		}

		// The state intact but the answer missing: asked again.
		wantInputRequired(t, tool+" no answer", callInput(t, ctx, c, tool,
			map[string]any{"requestState": r1.RequestState}, allCaps),
			map[string]string{everything.InputConfirm: "elicitation/create"})

		for what, state := range map[string]string{
			"tampered":  r1.RequestState + "-TAMPERED",
			"flipped":   flipFirst(r1.RequestState),
			"forged":    "eyJvIjoidGVzdCJ9.c2lnbmF0dXJl",
			"unsigned":  "hello",
			"oversized": strings.Repeat("a", everything.MaxRequestStateBytes+1),
		} {
			e := callInputError(t, ctx, c, tool, map[string]any{"inputResponses": confirm, "requestState": state}, allCaps)
			if !strings.Contains(e.Message, "requestState") {
				t.Errorf("%s, %s state: error %d %q does not say what was wrong", tool, what, e.Code, e.Message)
			}
		}
	}

	// A state is bound to the tool that minted it.
	r1 := callInput(t, ctx, c, everything.ToolInputRequestState, nil, allCaps)
	e := callInputError(t, ctx, c, everything.ToolInputTamperedState,
		map[string]any{"inputResponses": confirm, "requestState": r1.RequestState}, allCaps)
	if !strings.Contains(e.Message, everything.ToolInputRequestState) {
		t.Errorf("another tool's state: %q", e.Message)
	}

	// A state minted by another server instance (another key) is refused.
	other, octx := modernClient(t)
	foreign := callInput(t, octx, other, everything.ToolInputTamperedState, nil, allCaps).RequestState
	callInputError(t, ctx, c, everything.ToolInputTamperedState,
		map[string]any{"inputResponses": confirm, "requestState": foreign}, allCaps)
}

// flipFirst changes the first character of s.
func flipFirst(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

func TestInputRequiredMultipleInputs(t *testing.T) {
	c, ctx := modernClient(t)
	tool := everything.ToolInputMultipleInputs
	all := map[string]string{
		everything.InputUserName: "elicitation/create",
		everything.InputGreeting: "sampling/createMessage",
		everything.InputRoots:    "roots/list",
	}
	r1 := callInput(t, ctx, c, tool, nil, allCaps)
	wantInputRequired(t, "round 1", r1, all)
	if r1.RequestState == "" {
		t.Fatal("round 1 carries no requestState")
	}

	name := map[string]any{everything.InputUserName: accept(map[string]any{"name": "Alice"})}
	r := callInput(t, ctx, c, tool, map[string]any{"inputResponses": name, "requestState": r1.RequestState}, allCaps)
	wantInputRequired(t, "one of three answered", r, map[string]string{
		everything.InputGreeting: "sampling/createMessage",
		everything.InputRoots:    "roots/list",
	})

	answers := map[string]any{
		everything.InputUserName: accept(map[string]any{"name": "Alice"}),
		everything.InputGreeting: sampled("Hi there"),
		everything.InputRoots:    roots("file:///w"),
	}
	r = callInput(t, ctx, c, tool, map[string]any{"inputResponses": answers, "requestState": r.RequestState}, allCaps)
	if wantComplete(t, "all answered", r); r.text() != "name=Alice, greeting=Hi there, roots=file:///w" {
		t.Errorf("all answered: %q", r.text())
	}

	// Answers without the state start over.
	wantInputRequired(t, "no state", callInput(t, ctx, c, tool, map[string]any{"inputResponses": answers}, allCaps), all)
	// The tool needs all three capabilities.
	callInputError(t, ctx, c, tool, nil, map[string]any{"sampling": map[string]any{}})
}

func TestInputRequiredMultiRound(t *testing.T) {
	c, ctx := modernClient(t)
	tool := everything.ToolInputMultiRound
	r1 := callInput(t, ctx, c, tool, nil, allCaps)
	wantInputRequired(t, "round 1", r1, map[string]string{everything.InputStep1: "elicitation/create"})

	step1 := map[string]any{everything.InputStep1: accept(map[string]any{"name": "Alice"})}
	r2 := callInput(t, ctx, c, tool, map[string]any{"inputResponses": step1, "requestState": r1.RequestState}, allCaps)
	wantInputRequired(t, "round 2", r2, map[string]string{everything.InputStep2: "elicitation/create"})
	if r2.RequestState == "" || r2.RequestState == r1.RequestState {
		t.Fatalf("round 2's requestState %q, want a new one (round 1's was %q)", r2.RequestState, r1.RequestState)
	}

	step2 := map[string]any{everything.InputStep2: accept(map[string]any{"color": "blue"})}
	r3 := callInput(t, ctx, c, tool, map[string]any{"inputResponses": step2, "requestState": r2.RequestState}, allCaps)
	if wantComplete(t, "round 3", r3); !strings.Contains(r3.text(), "name=Alice, color=blue") {
		t.Errorf("round 3: %q", r3.text())
	}

	// Round 1's state with round 2's answer does not skip a round.
	wantInputRequired(t, "stale state", callInput(t, ctx, c, tool,
		map[string]any{"inputResponses": step2, "requestState": r1.RequestState}, allCaps),
		map[string]string{everything.InputStep1: "elicitation/create"})
}

func TestInputRequiredCapabilities(t *testing.T) {
	c, ctx := modernClient(t)
	tool := everything.ToolInputCapabilities
	for what, tc := range map[string]struct {
		caps map[string]any
		want map[string]string
	}{
		"sampling only": {map[string]any{"sampling": map[string]any{}},
			map[string]string{everything.InputCapital: "sampling/createMessage"}},
		"elicitation and roots": {map[string]any{"elicitation": map[string]any{}, "roots": map[string]any{}},
			map[string]string{everything.InputUserName: "elicitation/create", everything.InputRoots: "roots/list"}},
		"all": {allCaps, map[string]string{everything.InputCapital: "sampling/createMessage",
			everything.InputUserName: "elicitation/create", everything.InputRoots: "roots/list"}},
	} {
		wantInputRequired(t, what, callInput(t, ctx, c, tool, nil, tc.caps), tc.want)
	}
	wantComplete(t, "no capability", callInput(t, ctx, c, tool, nil, map[string]any{}))

	// An answer through an undeclared capability does not count.
	r := callInput(t, ctx, c, tool, map[string]any{"inputResponses": map[string]any{
		everything.InputUserName: accept(map[string]any{"name": "Eve"}),
	}}, map[string]any{"sampling": map[string]any{}})
	wantInputRequired(t, "undeclared answer", r, map[string]string{everything.InputCapital: "sampling/createMessage"})
	r = callInput(t, ctx, c, tool, map[string]any{"inputResponses": map[string]any{
		everything.InputCapital: sampled("Paris"),
	}}, map[string]any{"sampling": map[string]any{}})
	if wantComplete(t, "answered", r); r.text() != "Answered through: sampling" {
		t.Errorf("answered: %q", r.text())
	}
}

func TestInputRequiredPrompt(t *testing.T) {
	c, ctx := modernClient(t)
	get := func(extra map[string]any) inputResult {
		params := map[string]any{"name": everything.PromptInputRequired}
		for k, v := range extra {
			params[k] = v
		}
		_, m := modernCall(t, ctx, c, "prompts/get", params, allCaps)
		if m.Error != nil {
			t.Fatalf("prompts/get: %d %s", m.Error.Code, m.Error.Message)
		}
		return decode[inputResult](t, m.Result)
	}
	wantInputRequired(t, "round 1", get(nil), map[string]string{everything.InputUserContext: "elicitation/create"})
	r := get(map[string]any{"inputResponses": map[string]any{
		everything.InputUserContext: accept(map[string]any{"context": "testing"}),
	}})
	if r.ResultType != "complete" || len(r.Messages) != 1 || !strings.Contains(r.Messages[0].Content.Text, "testing") {
		t.Errorf("round 2: %+v", r)
	}
}

func TestInputRequiredNeedsDeclaredCapability(t *testing.T) {
	c, ctx := modernClient(t)
	for tool, caps := range map[string]map[string]any{
		everything.ToolInputElicitation:  {"sampling": map[string]any{}},
		everything.ToolInputSampling:     {"elicitation": map[string]any{}},
		everything.ToolInputListRoots:    {},
		everything.ToolInputRequestState: {},
		everything.ToolInputMultiRound:   {},
		everything.ToolStreamingElicit:   {},
	} {
		e := callInputError(t, ctx, c, tool, nil, caps)
		// Until the transport serves 2026-07-28 itself, mcp-go's handler turns
		// the capability error into -32603; lifeline answers -32021.
		if e.Code != -32021 && e.Code != -32603 {
			t.Errorf("%s without its capability: error %d %q", tool, e.Code, e.Message)
		}
	}
}

// TestInputRequiredLegacyClient checks that a client of an earlier protocol
// version gets a multi round-trip tool's question as a server-initiated
// request, sent on its behalf by mcp-go, and the tool's answer after it
// replied.
func TestInputRequiredLegacyClient(t *testing.T) {
	c, ctx := session(t)
	params, res := clientRequest(t, ctx, c, everything.ToolInputSampling, map[string]any{},
		"sampling/createMessage", sampled("Paris"))
	if !strings.Contains(string(params), "capital of France") {
		t.Errorf("sampling request %s", params)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != "LLM response: Paris" {
		t.Errorf("result %+v", res)
	}
}

package everything

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// Names of the tools and the prompt that ask the client for input the
// 2026-07-28 way (SEP-2322 multi round-trip): they answer with an
// input_required result naming what they need, and complete when the client
// retries the request with the answers. A client of an earlier protocol
// version gets the same questions as server-initiated requests, which mcp-go
// sends on its behalf.
const (
	ToolInputElicitation    = "test_input_required_result_elicitation"
	ToolInputSampling       = "test_input_required_result_sampling"
	ToolInputListRoots      = "test_input_required_result_list_roots"
	ToolInputRequestState   = "test_input_required_result_request_state"
	ToolInputMultipleInputs = "test_input_required_result_multiple_inputs"
	ToolInputMultiRound     = "test_input_required_result_multi_round"
	ToolInputTamperedState  = "test_input_required_result_tampered_state"
	ToolInputCapabilities   = "test_input_required_result_capabilities"
	PromptInputRequired     = "test_input_required_result_prompt"
)

// The keys of the input requests, as the conformance suite expects them.
const (
	InputUserName    = "user_name"
	InputCapital     = "capital_question"
	InputRoots       = "client_roots"
	InputConfirm     = "confirm"
	InputGreeting    = "greeting"
	InputStep1       = "step1"
	InputStep2       = "step2"
	InputUserContext = "user_context"
)

// StateOK is in the text of test_input_required_result_request_state's
// result once it has checked the echoed requestState.
const StateOK = "state-ok"

// needElicitation, needSampling and needRoots are the capabilities a
// question of each kind needs the client to have declared.
func needElicitation() mcp.ClientCapabilities {
	return mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}
}

func needSampling() mcp.ClientCapabilities {
	return mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}
}

func needRoots() mcp.ClientCapabilities {
	return mcp.ClientCapabilities{Roots: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}}
}

// inputTools holds what the multi round-trip tools share: the signer of
// their requestStates.
type inputTools struct {
	states *stateSigner
}

// addInputRequiredTools registers the multi round-trip tools and prompt.
// Each asks only for what the client declared it can answer: one that needs
// an undeclared capability fails with streamable.RequireClientCapabilities'
// error.
func addInputRequiredTools(s *server.MCPServer) {
	t := inputTools{states: newStateSigner(time.Now)}
	s.AddTool(newTool(ToolInputElicitation,
		"Asks the user's name (elicitation, key user_name) and greets them once the client retries with the answer."),
		t.elicitation)
	s.AddTool(newTool(ToolInputSampling,
		"Asks the client's LLM the capital of France (sampling, key capital_question) and returns its answer."),
		t.sampling)
	s.AddTool(newTool(ToolInputListRoots,
		"Asks the client for its roots (roots/list, key client_roots) and lists them."),
		t.listRoots)
	s.AddTool(newTool(ToolInputRequestState,
		"Asks for a confirmation (key confirm) with a signed requestState, and answers "+StateOK+" once the retry echoes it intact."),
		t.confirm(ToolInputRequestState))
	s.AddTool(newTool(ToolInputTamperedState,
		"Asks for a confirmation (key confirm) with an HMAC-signed requestState; a retry whose state was altered is refused."),
		t.confirm(ToolInputTamperedState))
	s.AddTool(newTool(ToolInputMultipleInputs,
		"Asks at once for the user's name (elicitation), a greeting (sampling) and the client's roots, with a signed requestState."),
		t.multipleInputs)
	s.AddTool(newTool(ToolInputMultiRound,
		"Asks in two rounds, each with a new signed requestState: the user's name (step1), then their favourite colour (step2)."),
		t.multiRound)
	s.AddTool(newTool(ToolInputCapabilities,
		"Asks for input only through the capabilities the client declared among sampling, elicitation and roots."),
		t.capabilities)
	s.AddPrompt(mcp.NewPrompt(PromptInputRequired,
		mcp.WithPromptTitle("Prompt that needs input"),
		mcp.WithPromptDescription("Asks the user which context the prompt should use (elicitation, key user_context), then returns the prompt.")),
		t.prompt)
}

func (t inputTools) elicitation(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := streamable.RequireClientCapabilities(ctx, needElicitation()); err != nil {
		return nil, err
	}
	if name, ok := acceptedString(req.Params.InputResponses, InputUserName, "name"); ok {
		return mcp.NewToolResultText("Hello, " + name + "!"), nil
	}
	return server.NewInputRequestBuilder("").
		Elicit(InputUserName, askString("What is your name?", "name")).
		ToolResult(), nil
}

func (t inputTools) sampling(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := streamable.RequireClientCapabilities(ctx, needSampling()); err != nil {
		return nil, err
	}
	if res := server.SamplingResponse(req.Params.InputResponses, InputCapital); res != nil {
		return mcp.NewToolResultText("LLM response: " + samplingText(res.Content)), nil
	}
	return server.NewInputRequestBuilder("").
		Sample(InputCapital, askLLM("What is the capital of France?", 100)).
		ToolResult(), nil
}

func (t inputTools) listRoots(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := streamable.RequireClientCapabilities(ctx, needRoots()); err != nil {
		return nil, err
	}
	if res := server.RootsResponse(req.Params.InputResponses, InputRoots); res != nil {
		return mcp.NewToolResultText("Client roots: " + rootURIs(res)), nil
	}
	return server.NewInputRequestBuilder("").Roots(InputRoots).ToolResult(), nil
}

// confirm asks for a confirmation under a signed requestState, and
// completes only when the retry echoes that state unaltered with the answer.
// A state that fails the check is an error.
func (t inputTools) confirm(owner string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := streamable.RequireClientCapabilities(ctx, needElicitation()); err != nil {
			return nil, err
		}
		ask := func() *mcp.CallToolResult {
			return server.NewInputRequestBuilder(t.states.mint(roundState{Owner: owner, Round: 1})).
				Elicit(InputConfirm, askBool("Please confirm", "ok")).
				ToolResult()
		}
		if req.Params.RequestState == "" {
			return ask(), nil
		}
		if _, err := t.states.open(owner, req.Params.RequestState); err != nil {
			return nil, fmt.Errorf("%s: %w", owner, err)
		}
		res := server.ElicitationResponse(req.Params.InputResponses, InputConfirm)
		if res == nil {
			return ask(), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("%s: the requestState was intact; action=%s, content=%s",
			StateOK, res.Action, contentJSON(res.Content))), nil
	}
}

func (t inputTools) multipleInputs(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	need := mcp.ClientCapabilities{Elicitation: needElicitation().Elicitation, Sampling: needSampling().Sampling, Roots: needRoots().Roots}
	if err := streamable.RequireClientCapabilities(ctx, need); err != nil {
		return nil, err
	}
	if req.Params.RequestState != "" {
		if _, err := t.states.open(ToolInputMultipleInputs, req.Params.RequestState); err != nil {
			return nil, fmt.Errorf("%s: %w", ToolInputMultipleInputs, err)
		}
	}
	in := req.Params.InputResponses
	name, haveName := acceptedString(in, InputUserName, "name")
	greeting := server.SamplingResponse(in, InputGreeting)
	roots := server.RootsResponse(in, InputRoots)
	if req.Params.RequestState != "" && haveName && greeting != nil && roots != nil {
		return mcp.NewToolResultText(fmt.Sprintf("name=%s, greeting=%s, roots=%s",
			name, samplingText(greeting.Content), rootURIs(roots))), nil
	}
	// Ask again for whatever is missing (all of it on the first round).
	b := server.NewInputRequestBuilder(t.states.mint(roundState{Owner: ToolInputMultipleInputs, Round: 1}))
	if !haveName || req.Params.RequestState == "" {
		b.Elicit(InputUserName, askString("What is your name?", "name"))
	}
	if greeting == nil || req.Params.RequestState == "" {
		b.Sample(InputGreeting, askLLM("Generate a greeting", 50))
	}
	if roots == nil || req.Params.RequestState == "" {
		b.Roots(InputRoots)
	}
	return b.ToolResult(), nil
}

func (t inputTools) multiRound(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := streamable.RequireClientCapabilities(ctx, needElicitation()); err != nil {
		return nil, err
	}
	askStep1 := func() *mcp.CallToolResult {
		return server.NewInputRequestBuilder(t.states.mint(roundState{Owner: ToolInputMultiRound, Round: 1})).
			Elicit(InputStep1, askString("Step 1: What is your name?", "name")).
			ToolResult()
	}
	askStep2 := func(name string) *mcp.CallToolResult {
		st := roundState{Owner: ToolInputMultiRound, Round: 2, Data: map[string]string{"name": name}}
		return server.NewInputRequestBuilder(t.states.mint(st)).
			Elicit(InputStep2, askString("Step 2: What is your favorite color?", "color")).
			ToolResult()
	}
	if req.Params.RequestState == "" {
		return askStep1(), nil
	}
	st, err := t.states.open(ToolInputMultiRound, req.Params.RequestState)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ToolInputMultiRound, err)
	}
	in := req.Params.InputResponses
	switch st.Round {
	case 1:
		if name, ok := acceptedString(in, InputStep1, "name"); ok {
			return askStep2(name), nil
		}
		return askStep1(), nil
	case 2:
		if color, ok := acceptedString(in, InputStep2, "color"); ok {
			return mcp.NewToolResultText(fmt.Sprintf("Done in 3 rounds: name=%s, color=%s", st.Data["name"], color)), nil
		}
		return askStep2(st.Data["name"]), nil
	default:
		return nil, fmt.Errorf("%s: %w: round %d does not exist", ToolInputMultiRound, ErrBadRequestState, st.Round)
	}
}

// capabilities asks through every capability the client declared among
// sampling, elicitation and roots, and through no other.
func (t inputTools) capabilities(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	caps := clientCapabilities(ctx)
	in := req.Params.InputResponses
	var got []string
	if caps.Sampling != nil && server.SamplingResponse(in, InputCapital) != nil {
		got = append(got, "sampling")
	}
	if _, ok := acceptedString(in, InputUserName, "name"); ok && caps.Elicitation != nil {
		got = append(got, "elicitation")
	}
	if caps.Roots != nil && server.RootsResponse(in, InputRoots) != nil {
		got = append(got, "roots")
	}
	if len(got) > 0 {
		return mcp.NewToolResultText("Answered through: " + strings.Join(got, ", ")), nil
	}
	b := server.NewInputRequestBuilder("")
	asked := false
	if caps.Sampling != nil {
		b.Sample(InputCapital, askLLM("What is the capital of France?", 100))
		asked = true
	}
	if caps.Elicitation != nil {
		b.Elicit(InputUserName, askString("What is your name?", "name"))
		asked = true
	}
	if caps.Roots != nil {
		b.Roots(InputRoots)
		asked = true
	}
	if !asked {
		return mcp.NewToolResultText("The client declared none of sampling, elicitation and roots: nothing to ask."), nil
	}
	return b.ToolResult(), nil
}

func (t inputTools) prompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if err := streamable.RequireClientCapabilities(ctx, needElicitation()); err != nil {
		return nil, err
	}
	if c, ok := acceptedString(req.Params.InputResponses, InputUserContext, "context"); ok {
		return mcp.NewGetPromptResult("A prompt built from the user's input", []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Answer with this context in mind: "+c)),
		}), nil
	}
	return server.NewInputRequestBuilder("").
		Elicit(InputUserContext, askString("What context should the prompt use?", "context")).
		PromptResult(), nil
}

// clientCapabilities returns what the request's client declared: in the
// request's _meta (2026-07-28) or at initialize (earlier versions).
func clientCapabilities(ctx context.Context) mcp.ClientCapabilities {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		if info.ClientCapabilities != nil {
			return *info.ClientCapabilities
		}
		return mcp.ClientCapabilities{}
	}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		return s.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

// askString is a form elicitation of one required string field.
func askString(message, field string) mcp.ElicitationParams {
	return askField(message, field, "string")
}

// askBool is a form elicitation of one required boolean field.
func askBool(message, field string) mcp.ElicitationParams {
	return askField(message, field, "boolean")
}

func askField(message, field, typ string) mcp.ElicitationParams {
	return mcp.ElicitationParams{
		Mode:    mcp.ElicitationModeForm,
		Message: message,
		RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{field: map[string]any{"type": typ}},
			"required":   []string{field},
		},
	}
}

// askLLM is a sampling request of one user message.
func askLLM(prompt string, maxTokens int) mcp.CreateMessageParams {
	return mcp.CreateMessageParams{
		Messages: []mcp.SamplingMessage{{
			Role:    mcp.RoleUser,
			Content: mcp.NewTextContent(prompt),
		}},
		MaxTokens: maxTokens,
	}
}

// acceptedString returns the string field of the elicitation answer under
// key, when the user accepted and the field holds a non-empty string. Any
// other answer (absent, declined, of the wrong shape) counts as missing, so
// the caller asks again.
func acceptedString(responses mcp.InputResponses, key, field string) (string, bool) {
	res := server.ElicitationResponse(responses, key)
	if res == nil || res.Action != mcp.ElicitationResponseActionAccept {
		return "", false
	}
	content, ok := res.Content.(map[string]any)
	if !ok {
		return "", false
	}
	v, ok := content[field].(string)
	return v, ok && v != ""
}

// rootURIs lists the URIs of a roots/list answer.
func rootURIs(res *mcp.ListRootsResult) string {
	uris := make([]string, 0, len(res.Roots))
	for _, r := range res.Roots {
		uris = append(uris, r.URI)
	}
	if len(uris) == 0 {
		return "(none)"
	}
	return strings.Join(uris, ", ")
}

// contentJSON renders an elicitation answer's content as JSON.
func contentJSON(content any) string {
	if content == nil {
		return "{}"
	}
	b, err := json.Marshal(content)
	if err != nil {
		return fmt.Sprintf("(content does not encode: %v)", err)
	}
	return string(b)
}

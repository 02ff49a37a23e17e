package everything

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// maxCompletionValues is the most values one completion/complete answer may
// carry, as the specification sets it.
const maxCompletionValues = 100

// promptCompletions completes the arguments of test_prompt_with_arguments
// from a fixed list of suggestions per argument: those that start with what
// the user typed, ignoring case. Other prompts and arguments get no
// suggestions.
type promptCompletions struct{}

// argumentSuggestions returns the suggestions for an argument of a prompt,
// or nil.
func argumentSuggestions(prompt, argument string) []string {
	if prompt != PromptWithArguments {
		return nil
	}
	switch argument {
	case "arg1":
		return []string{"hello", "help", "test", "testValue1", "testing"}
	case "arg2":
		return []string{"world", "word", "testValue2"}
	}
	return nil
}

// CompletePromptArgument implements server.PromptCompletionProvider.
func (promptCompletions) CompletePromptArgument(_ context.Context, prompt string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	prefix := strings.ToLower(arg.Value)
	values := []string{}
	for _, v := range argumentSuggestions(prompt, arg.Name) {
		if strings.HasPrefix(strings.ToLower(v), prefix) {
			values = append(values, v)
		}
	}
	total := len(values)
	if len(values) > maxCompletionValues {
		values = values[:maxCompletionValues]
	}
	return &mcp.Completion{Values: values, Total: total, HasMore: total > len(values)}, nil
}

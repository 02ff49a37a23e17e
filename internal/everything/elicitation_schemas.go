package everything

// The requested schemas of the elicitation tools. Each function builds a
// fresh map, so a caller may not change what another caller sends.

// userInfoSchema asks for a username and an email address, both required.
func userInfoSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"username": map[string]any{"type": "string", "description": "your user name"},
			"email":    map[string]any{"type": "string", "description": "your email address", "format": "email"},
		},
		"required": []string{"username", "email"},
	}
}

// defaultsSchema has one optional field of each primitive type, each with a
// default value (SEP-1034): string, integer, number, string enum, boolean.
func defaultsSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":  map[string]any{"type": "string", "description": "user name", "default": "John Doe"},
			"age":   map[string]any{"type": "integer", "description": "age in years", "default": 30},
			"score": map[string]any{"type": "number", "description": "score", "default": 95.5},
			"status": map[string]any{
				"type":        "string",
				"description": "account status",
				"enum":        []string{"active", "inactive", "pending"},
				"default":     "active",
			},
			"verified": map[string]any{"type": "boolean", "description": "whether the account is verified", "default": true},
		},
		"required": []string{},
	}
}

// titled returns const/title options, as titled enums list them.
func titled(pairs ...string) []map[string]any {
	out := make([]map[string]any, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, map[string]any{"const": pairs[i], "title": pairs[i+1]})
	}
	return out
}

// enumsSchema has one field of each enum form SEP-1330 defines.
func enumsSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			// Single choice, values are their own labels.
			"untitledSingle": map[string]any{
				"type":        "string",
				"description": "pick one",
				"enum":        []string{"option1", "option2", "option3"},
			},
			// Single choice, each value with a display title.
			"titledSingle": map[string]any{
				"type":        "string",
				"description": "pick one (titled)",
				"oneOf":       titled("value1", "First Option", "value2", "Second Option", "value3", "Third Option"),
			},
			// Single choice, titles in the deprecated enumNames.
			"legacyEnum": map[string]any{
				"type":        "string",
				"description": "pick one (legacy titles)",
				"enum":        []string{"opt1", "opt2", "opt3"},
				"enumNames":   []string{"Option One", "Option Two", "Option Three"},
			},
			// Several choices, values are their own labels.
			"untitledMulti": map[string]any{
				"type":        "array",
				"description": "pick one or more",
				"minItems":    1,
				"maxItems":    3,
				"items":       map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}},
			},
			// Several choices, each value with a display title.
			"titledMulti": map[string]any{
				"type":        "array",
				"description": "pick one or more (titled)",
				"minItems":    1,
				"maxItems":    3,
				"items": map[string]any{
					"anyOf": titled("value1", "First Choice", "value2", "Second Choice", "value3", "Third Choice"),
				},
			},
		},
		"required": []string{},
	}
}

package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// checkModern validates a 2026-07-28 request as that version requires, in
// mcp-go's order: the MCP-Protocol-Version header is present (-32020), the
// message's _meta names a version (-32602), the two agree (-32020), the
// version is one this transport serves (-32022, with the supported and
// requested versions), and the Mcp-Method, Mcp-Name and Mcp-Param-* headers
// mirror the body (SEP-2243, -32020). Each failure is a 400.
//
// mcp-go's own handler runs the header checks through a context key it
// keeps unexported (MCPServer.HandleMessage skips them without it), so
// lifeline runs the same exported validators here, before the message
// reaches the MCPServer. A Last-Event-ID header is ignored, as the
// specification says (mcp-go's handler refuses it).
func (h *Handler) checkModern(r *http.Request, env envelope, era requestEra) *failure {
	switch {
	case era.header == "":
		return errModernHeader("the MCP-Protocol-Version header is required on every request of protocol version 2026-07-28 and later")
	case era.meta == "":
		return errModernMeta("the MCP-Protocol-Version header names " + era.header +
			", of the protocol from 2026-07-28 on, whose every request carries its version in params._meta " + mcp.MetaKeyProtocolVersion + ": this one does not")
	case era.header != era.meta:
		return errModernHeader("the MCP-Protocol-Version header (" + era.header + ") does not match params._meta " +
			mcp.MetaKeyProtocolVersion + " (" + era.meta + ")")
	case !slices.Contains(h.versions, era.meta):
		return errModernVersion(era.meta, h.versions)
	}
	method := mcp.MCPMethod(env.Method)
	name, f := checkStandardHeaders(r.Header, method, env.Params, era)
	if f != nil {
		return f
	}
	if f := checkParamHeaderChars(r.Header); f != nil {
		return f
	}
	if method != mcp.MethodToolsCall {
		return nil
	}
	var tool *mcp.Tool
	if st := h.mcp.GetTool(name); st != nil {
		tool = &st.Tool
	} else {
		tool = h.listedTool(r.Context(), name) // a task tool (mcp-go exports no getter)
	}
	if tool == nil || !mayHaveHeaderParams(tool) {
		return nil // an unknown tool is mcp-go's to answer
	}
	lookup := func(name string) (string, bool) {
		v, ok := r.Header[textproto.CanonicalMIMEHeaderKey(name)]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
	if err := mcp.ValidateParamHeadersLookup(lookup, tool, env.Params); err != nil {
		return errModernHeader(err.Error())
	}
	return nil
}

// checkStandardHeaders checks Mcp-Method and, for a method that names
// something, Mcp-Name (Base64-decoded) against the body, as
// mcp.ValidateStandardHeaders does, and returns the body's name (the
// tool's, for checkModern): from the walk that read the version when it
// could tell (requestEra.named), else read here (nameInParams).
func checkStandardHeaders(hdr http.Header, method mcp.MCPMethod, params json.RawMessage, era requestEra) (string, *failure) {
	got := hdr.Get(mcp.HeaderMethod)
	if got == "" {
		return "", errModernHeader("header mismatch: " + mcp.HeaderMethod + ": missing required header")
	}
	if got != string(method) {
		return "", errModernHeader(fmt.Sprintf("header mismatch: %s: header value %q does not match body value %q", mcp.HeaderMethod, got, method))
	}
	if !mcp.MethodRequiresNameHeader(method) {
		return "", nil
	}
	field := "name"
	if method == mcp.MethodResourcesRead {
		field = "uri"
	}
	var body string
	switch {
	case !era.named:
		body = nameInParams(params, field)
	case field == "uri":
		body = stringValue(era.uri)
	default:
		body = stringValue(era.name)
	}
	got = hdr.Get(mcp.HeaderName)
	if got == "" {
		return "", errModernHeader(fmt.Sprintf("header mismatch: %s: missing required header for method %q", mcp.HeaderName, method))
	}
	decoded, ok := mcp.DecodeHeaderValue(got)
	if !ok {
		return "", errModernHeader("header mismatch: " + mcp.HeaderName + ": invalid Base64 encoding")
	}
	if decoded != body {
		return "", errModernHeader(fmt.Sprintf("header mismatch: %s: header value %q does not match body value %q", mcp.HeaderName, decoded, body))
	}
	return body, nil
}

// mayHaveHeaderParams reports whether a tool's input schema may declare
// x-mcp-header parameters, without encoding it (mcp.ValidateParamHeadersLookup
// encodes the schema on every call to find them): a raw schema that does
// not contain the word, or a schema whose maps never hold the key, has
// none. Anything else (a value that is not a plain map) is left to
// mcp-go's own lookup.
func mayHaveHeaderParams(tool *mcp.Tool) bool {
	if len(tool.RawInputSchema) > 0 {
		return bytes.Contains(tool.RawInputSchema, []byte(headerParamKey))
	}
	return anyHeaderKey(tool.InputSchema.Properties, 0)
}

// headerParamKey is the schema keyword of SEP-2243 parameter headers.
const headerParamKey = "x-mcp-header"

// maxSchemaDepth bounds anyHeaderKey's walk; deeper schemas are left to
// mcp-go's lookup.
const maxSchemaDepth = 32

// anyHeaderKey reports whether v, a decoded JSON schema fragment, may hold
// headerParamKey.
func anyHeaderKey(v any, depth int) bool {
	if depth > maxSchemaDepth {
		return true
	}
	switch t := v.(type) {
	case nil, string, bool, float64, int, int64, json.Number:
		return false
	case map[string]any:
		for k, e := range t {
			if k == headerParamKey || anyHeaderKey(e, depth+1) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range t {
			if anyHeaderKey(e, depth+1) {
				return true
			}
		}
		return false
	default:
		return true // a typed value: mcp-go's lookup encodes it
	}
}

// checkParamHeaderChars refuses an Mcp-Param-* header whose value holds a
// character outside visible ASCII, space and tab: a client encodes any
// other value in Base64 (SEP-2243).
func checkParamHeaderChars(hdr http.Header) *failure {
	for name, values := range hdr {
		if !strings.HasPrefix(name, mcp.HeaderParamPrefix) {
			continue
		}
		for _, v := range values {
			for i := 0; i < len(v); i++ {
				if c := v[i]; c != '\t' && (c < 0x20 || c > 0x7e) {
					return errModernHeader("the " + name + " header holds a character outside visible ASCII; encode such a value as =?base64?...?=")
				}
			}
		}
	}
	return nil
}

// listedTool finds the tool named name in the MCPServer's tools/list (task
// tools included, which GetTool does not see), or returns nil. It costs
// what a client's tools/list does, once per tools/call of a name GetTool
// does not know.
func (h *Handler) listedTool(ctx context.Context, name string) *mcp.Tool {
	var found *mcp.Tool
	h.listPages(ctx, mcp.MethodToolsList, func(result any) (bool, mcp.Cursor) {
		res, ok := result.(mcp.ListToolsResult)
		if !ok {
			return false, ""
		}
		for i := range res.Tools {
			if res.Tools[i].Name == name {
				found = &res.Tools[i]
				return true, ""
			}
		}
		return false, res.NextCursor
	})
	return found
}

// nameInParams is the string params holds in its member field ("name" or
// "uri"), as encoding/json decodes it into a struct with that field, ""
// when there is none or it is of another type (malformed params are
// mcp-go's to answer): read in one walk of params where that tells
// (soleMember), else decoded.
func nameInParams(params json.RawMessage, field string) string {
	if s, ok := soleString(params, field); ok {
		return s
	}
	return decodedName(params, field)
}

// decodedName is nameInParams by encoding/json: params decoded into a
// struct with both fields, a decoding error ignored (what decoded stays).
func decodedName(params json.RawMessage, field string) string {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	_ = json.Unmarshal(params, &p)
	if field == "uri" {
		return p.URI
	}
	return p.Name
}

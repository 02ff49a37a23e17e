package streamable

import (
	"encoding/json"
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
	if err := mcp.ValidateStandardHeaders(r.Header.Get, era.meta, method, env.Params); err != nil {
		return errModernHeader(err.Error())
	}
	if f := checkParamHeaderChars(r.Header); f != nil {
		return f
	}
	if method != mcp.MethodToolsCall {
		return nil
	}
	var call struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(env.Params, &call) != nil {
		return nil // mcp-go answers the malformed params
	}
	tool := h.mcp.GetTool(call.Name)
	if tool == nil {
		return nil // mcp-go answers the unknown tool
	}
	lookup := func(name string) (string, bool) {
		v, ok := r.Header[textproto.CanonicalMIMEHeaderKey(name)]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
	if err := mcp.ValidateParamHeadersLookup(lookup, &tool.Tool, env.Params); err != nil {
		return errModernHeader(err.Error())
	}
	return nil
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

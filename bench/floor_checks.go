package bench

import (
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The checks MCPServer runs on a 2026-07-28 request when mcp-go's own
// transport hands it the request's headers (HandleMessage reads them from
// its context, under a key of mcp-go's that no other transport can set:
// server/request_handler.go, server/response.go's
// validateStandardHeadersForMessage): Mcp-Method and Mcp-Name against the
// body (mcp.ValidateStandardHeaders), and a tools/call's Mcp-Param-*
// headers against its tool's x-mcp-header parameters
// (mcp.ValidateParamHeadersLookup). Without the headers HandleMessage skips
// them, so the floor, which hands it none, does less of MCPServer's work
// than MCPServer does for its own transport, and less than the
// specification has a server do. With Options.FloorHeaderChecks the floor
// runs them before HandleMessage, with mcp-go's exported validators, as
// MCPServer would: a decoding of the message for them (here with its id and
// method, which MCPServer has from a parse of its own), the tool's name
// decoded and the tool looked up, and the comparisons. It goes by the
// header's version where MCPServer goes by the body's (with the header
// present); the harness sends both alike. The harness's tool has no
// x-mcp-header parameter, so ValidateParamHeadersLookup returns at once,
// as it does in MCPServer.

// floorHeaderChecks answers r, a POST with body, with mcp-go's error when
// MCPServer, given r's headers, would refuse it; false when it would not.
func floorHeaderChecks(w http.ResponseWriter, r *http.Request, s *server.MCPServer, body []byte) bool {
	version := r.Header.Get(mcp.HeaderProtocolVersion)
	if !mcp.IsModernProtocol(version) {
		return false
	}
	var msg struct {
		ID     mcp.RequestId   `json:"id"`
		Method mcp.MCPMethod   `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false // HandleMessage answers it
	}
	err := mcp.ValidateStandardHeaders(r.Header.Get, version, msg.Method, msg.Params)
	if err == nil && msg.Method == mcp.MethodToolsCall {
		if tool := floorToolOf(s, msg.Params); tool != nil {
			err = mcp.ValidateParamHeadersLookup(func(name string) (string, bool) {
				v := r.Header.Values(name)
				if len(v) == 0 {
					return "", false
				}
				return v[0], true
			}, tool, msg.Params)
		}
	}
	if err == nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(mcp.NewJSONRPCError(msg.ID, mcp.HEADER_MISMATCH, err.Error(), nil))
	return true
}

// floorToolOf is the tool a tools/call names, as MCPServer finds it for
// the checks (toolForHeaderValidation): its name decoded from params, the
// tool looked up (the floor's sessions, when it gives any, hold no tools).
func floorToolOf(s *server.MCPServer, params json.RawMessage) *mcp.Tool {
	var call struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(params, &call) != nil || call.Name == "" {
		return nil
	}
	if t := s.GetTool(call.Name); t != nil {
		return &t.Tool
	}
	return nil
}

package streamable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

var _ server.ProtocolVersionSupporter = (*Handler)(nil)

// servedVersions is what a Handler serves: every version mcp-go implements
// that the configured list names (all of them when the list is empty),
// newest first, and of those the session-era ones (initialize handshake).
type servedVersions struct {
	all     []string // newest first; advertised by server/discover
	session []string // all's versions before 2026-07-28, newest first
	// restricted: the list left out a version mcp-go implements, so
	// requests are checked against it and initialize may be renegotiated.
	restricted bool
}

// newServedVersions resolves Config.ProtocolVersions. Versions mcp-go does
// not implement are ignored, each logged at Warn (as mcp-go's own
// SupportsProtocolVersion never matches them); a list naming none that it
// implements would serve nothing and panics, a programming error like New
// with a nil server.
func newServedVersions(list []string, log *slog.Logger) servedVersions {
	var v servedVersions
	for _, want := range list {
		if !mcp.IsValidProtocolVersion(want) {
			log.Warn("lifeline: Config.ProtocolVersions names a protocol version mcp-go does not implement; ignored",
				"version", want, "implemented", strings.Join(mcp.ValidProtocolVersions, ", "))
		}
	}
	for _, known := range mcp.ValidProtocolVersions {
		if len(list) == 0 || slices.Contains(list, known) {
			v.all = append(v.all, known)
		}
	}
	if len(v.all) == 0 {
		panic(fmt.Sprintf("streamable: Config.ProtocolVersions %q names no protocol version mcp-go implements (%s)",
			list, strings.Join(mcp.ValidProtocolVersions, ", ")))
	}
	v.restricted = len(v.all) < len(mcp.ValidProtocolVersions)
	for _, s := range v.all {
		if !mcp.IsModernProtocol(s) {
			v.session = append(v.session, s)
		}
	}
	return v
}

// SupportsProtocolVersion reports whether the handler serves protocol
// version v: one mcp-go implements and Config.ProtocolVersions lists (every
// one when it is empty). It implements mcp-go's
// server.ProtocolVersionSupporter.
func (h *Handler) SupportsProtocolVersion(v string) bool {
	return slices.Contains(h.versions, v)
}

// servesSession reports whether v is a session-era version the handler
// serves.
func (h *Handler) servesSession(v string) bool {
	return slices.Contains(h.served.session, v)
}

// checkProtocolVersion rejects an MCP-Protocol-Version header naming a
// version this handler does not serve on its sessions. A missing header is
// accepted (it means 2025-03-26 to a client that predates the header; a
// session's own version was negotiated by its initialize).
func (h *Handler) checkProtocolVersion(r *http.Request) *failure {
	v := headerValue(r.Header, headerProtocolVersion)
	if v == "" || h.servesSession(v) {
		return nil
	}
	return errUnsupportedVersion(v, h.served.session)
}

// negotiateInitialize makes an initialize request ask for a version the
// handler serves: one naming a session-era version it does not serve (or
// none, which means 2025-03-26, or one it does not know) is rewritten to
// ask for the newest it serves, which mcp-go then answers with; the client
// either goes on with that version or disconnects, as the specification
// has it. Without session-era versions (only 2026-07-28 is served), the
// request is refused (400, the versions served in its data). With every
// version served it costs nothing: mcp-go negotiates itself.
func (h *Handler) negotiateInitialize(env envelope, body []byte) (envelope, []byte, *failure) {
	if !h.served.restricted {
		return env, body, nil
	}
	var obj map[string]json.RawMessage
	if len(env.Params) > 0 && json.Unmarshal(env.Params, &obj) != nil {
		return env, body, nil // mcp-go answers the malformed params
	}
	// The version asked for is read as mcp-go reads it, into a struct:
	// of keys differing only in case, the last in the text wins (a map's
	// order is random, and would let a client pick one mcp-go ignores).
	var p struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
	}
	var asked string
	if len(env.Params) > 0 && json.Unmarshal(env.Params, &p) == nil {
		_ = json.Unmarshal(p.ProtocolVersion, &asked)
	}
	want := asked
	if want == "" {
		want = mcp.ProtocolVersion20250326
	}
	if h.servesSession(want) {
		return env, body, nil
	}
	if len(h.served.session) == 0 {
		return env, body, errNoSessionVersions(asked, h.versions)
	}
	version, _ := json.Marshal(h.served.session[0])
	params := env.Params
	if len(params) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
		params = []byte("{}")
	}
	newParams, err := setMember(params, "protocolVersion", version)
	if err != nil {
		return env, body, errInternal("re-encoding initialize params: " + err.Error())
	}
	newBody, err := setMember(body, "params", newParams)
	if err != nil {
		return env, body, errInternal("re-encoding initialize: " + err.Error())
	}
	env.Params = newParams
	return env, newBody, nil
}

// setMember returns the JSON object obj with every member whose name is
// name, in any case, removed and name: value added last. The other members
// stay as they were, in their order, duplicates included, so that a
// decoder reading the result (encoding/json: the last of names differing
// in case wins) sees what it saw in obj.
func setMember(obj []byte, name string, value json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object (%v)", err)
	}
	out := []byte{'{'}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if strings.EqualFold(key, name) {
			continue
		}
		k, _ := json.Marshal(key)
		out = append(append(append(append(out, k...), ':'), v...), ',')
	}
	k, _ := json.Marshal(name)
	out = append(append(append(out, k...), ':'), value...)
	return append(out, '}'), nil
}

package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// methodListen opens a 2026-07-28 listen stream, the long-lived stream of
// that version.
const methodListen = string(mcp.MethodSubscriptionsListen)

// metaVersionKey is what a body must contain to declare a version in
// params._meta: the cheap check spares other requests a decode.
var metaVersionKey = []byte(`"` + mcp.MetaKeyProtocolVersion + `"`)

// requestEra is the protocol versions a POST declares: in its
// MCP-Protocol-Version header and in its message's params._meta. It is of
// the sessionless era (2026-07-28) when either names 2026-07-28 or a later
// version, as mcp-go decides it (mcp.IsModernProtocol), so both eras share
// the endpoint, decided per request.
type requestEra struct {
	header, meta string
	// named says params were read in one walk (readParams) and name and
	// uri are their members' values as they stand in the body (nil for
	// none), for the header checks (checkStandardHeaders) to take without
	// a second walk.
	named     bool
	name, uri []byte
}

func (e requestEra) modern() bool {
	return mcp.IsModernProtocol(e.header) || mcp.IsModernProtocol(e.meta)
}

// eraOf reads the versions r and its message's params declare.
func eraOf(r *http.Request, params json.RawMessage) requestEra {
	e := requestEra{header: headerValue(r.Header, headerProtocolVersion)}
	// A key may be written with escapes ("io.modelcontextprotocol\/..."):
	// a body with a backslash is decoded too.
	if bytes.Contains(params, metaVersionKey) || bytes.IndexByte(params, '\\') >= 0 {
		e.meta, e.name, e.uri, e.named = readParams(params)
	}
	return e
}

// paramsFieldNames are the members of params readParams reads.
var paramsFieldNames = [...]string{"_meta", "name", "uri"}

// readParams reads the version params._meta declares, as encoding/json
// decodes it ("" when it cannot: a member of another type), and, in the
// same walk of params (soleMembers), the values of its name and uri
// members, for nameInParams' answer without a walk of its own. named is
// false when the walk could not tell (the version is then decoded, and the
// names are left to nameInParams).
func readParams(params json.RawMessage) (meta string, name, uri []byte, named bool) {
	var v [len(paramsFieldNames)][]byte
	if !soleMembers(params, paramsFieldNames[:], v[:]) {
		return decodedMetaVersion(params), nil, nil, false
	}
	if meta, ok := soleString(v[0], mcp.MetaKeyProtocolVersion); ok {
		return meta, v[1], v[2], true
	}
	return decodedMetaVersion(params), v[1], v[2], true
}

// decodedMetaVersion is readParams' version by encoding/json: params
// decoded into a struct with the one field, "" when it does not decode.
func decodedMetaVersion(params json.RawMessage) string {
	var p struct {
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return p.Meta.Version
}

// serveModern serves one 2026-07-28 POST with lifeline's own code: checked
// as that version requires (modern_checks.go), then run on an ephemeral
// session of its own, like a stateless request, through the same request
// path as the session era (post_request.go): notifications it sends go on
// its own response, none lost, under write deadlines, with keep-alives on
// a long response, cancelled when its client goes away, and bounded by
// Shutdown. A subscriptions/listen request becomes a listen stream
// (listen.go). Nothing here mints or reads a session id.
func (h *Handler) serveModern(w http.ResponseWriter, r *http.Request, m *postMessage) {
	sess, feed := h.admitModern(w, r, m)
	if sess == nil {
		return
	}
	if feed != nil {
		defer h.listens.close(feed)
	}
	defer sess.endEphemeral()
	switch {
	case len(m.env.ID) == 0:
		h.acceptNotification(w, r, sess, m.body)
	case feed != nil:
		h.serveListen(w, r, sess, &m.env, m.body, feed)
	default:
		h.runRequestOn(w, r, sess, &m.env, m.body, nil, nil)
	}
}

// eraContext is ctx as a request on sess runs in: for a 2026-07-28 one,
// with the protocol versions the handler serves, which mcp-go holds the
// version in its _meta to.
func (h *Handler) eraContext(ctx context.Context, sess *session) context.Context {
	if !sess.modern {
		return ctx
	}
	return mcpserver.WithSupportedProtocolVersions(ctx, h.versions)
}

// admitModern checks a 2026-07-28 message and makes the ephemeral session
// it runs on, registered with the handler, and for a listen request its
// feed: a nil session, with the request answered, when it is refused. Its
// frame, like acceptPost's, is off the stack while the message runs.
//
//go:noinline
func (h *Handler) admitModern(w http.ResponseWriter, r *http.Request, m *postMessage) (*session, *listenFeed) {
	env := &m.env
	id := env.requestID()
	if env.Method == "" {
		h.writeFailure(w, errModernResponse().forRequest(env.ID))
		return nil, nil
	}
	if f := h.checkModern(r, *env, m.era); f != nil {
		h.writeFailure(w, f.forRequest(id))
		return nil, nil
	}
	sess := newEphemeralSession(h, "modern-", true)
	var feed *listenFeed
	if env.Method == methodListen && len(env.ID) > 0 {
		if !streams(w) {
			h.writeFailure(w, errListenCannotStream().forRequest(id))
			return nil, nil
		}
		if f := checkListenFilter(env.Params); f != nil {
			h.writeFailure(w, f.forRequest(id))
			return nil, nil
		}
		var f *failure
		if feed, f = h.listens.open(env.ID, h.cfg.MaxListenStreams); f != nil {
			h.writeFailure(w, f.forRequest(id))
			return nil, nil
		}
		sess.listen = true
	}
	if f := h.addSession(sess); f != nil {
		if feed != nil {
			h.listens.close(feed)
		}
		h.writeFailure(w, f.forRequest(id))
		return nil, nil
	}
	return sess, feed
}

// checkListenFilter bounds what a listen request asks for: at most
// MaxSubscriptionsPerSession resource subscriptions, duplicates counted
// (mcp-go keeps the list as sent, in the filter and the acknowledgement).
func checkListenFilter(params json.RawMessage) *failure {
	var p struct {
		Notifications struct {
			ResourceSubscriptions []json.RawMessage `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil // mcp-go answers the malformed params
	}
	if n := len(p.Notifications.ResourceSubscriptions); n > MaxSubscriptionsPerSession {
		return errModernMeta(fmt.Sprintf("a listen stream subscribes to at most %d resources; this one asks for %d",
			MaxSubscriptionsPerSession, n))
	}
	return nil
}

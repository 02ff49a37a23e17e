package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// modernMsg is a 2026-07-28 message: a request with id (a notification
// when id is nil) carrying in params._meta the protocol version and client
// capabilities every request of that version carries, plus meta.
func modernMsg(id any, method string, params map[string]any, meta map[string]any) []byte {
	if params == nil {
		params = map[string]any{}
	}
	m := map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}
	for k, v := range meta {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	params["_meta"] = m
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id != nil {
		msg["id"] = id
	}
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err)
	}
	return b
}

// modernRequest builds a POST of body with the headers a 2026-07-28 client
// sends: the version, Mcp-Method and, for a named method, Mcp-Name. extra
// sets more headers, or removes one when its value is "".
func (r *rig) modernRequest(ctx context.Context, t *testing.T, body []byte, extra map[string]string) *http.Request {
	t.Helper()
	c := r.client()
	c.ProtocolVersion = mcp.ProtocolVersion20260728
	req, err := c.NewRequest(ctx, http.MethodPost, body)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
		req.Header.Set(mcp.HeaderMethod, msg.Method)
		switch {
		case msg.Params.Name != "":
			req.Header.Set(mcp.HeaderName, msg.Params.Name)
		case msg.Params.URI != "":
			req.Header.Set(mcp.HeaderName, msg.Params.URI)
		}
	}
	for k, v := range extra {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	return req
}

// modernPost sends body as modernRequest builds it and reads the whole answer.
func (r *rig) modernPost(ctx context.Context, t *testing.T, body []byte, extra map[string]string) *testutil.Response {
	t.Helper()
	resp, err := r.client().Do(r.modernRequest(ctx, t, body, extra))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// rpcErrorOf decodes the JSON-RPC error of a one-message answer.
func rpcErrorOf(t *testing.T, resp *testutil.Response) (id string, code int, message string, data json.RawMessage) {
	t.Helper()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Body, &m); err != nil || m.Error == nil {
		t.Fatalf("answer %d is not a JSON-RPC error: %s", resp.Status, resp.Body)
	}
	return string(m.ID), m.Error.Code, m.Error.Message, m.Error.Data
}

// modernCallAsync sends a 2026-07-28 tools/call of tool with id in the
// background; its answer arrives on the channel (nil if it failed).
func (r *rig) modernCallAsync(ctx context.Context, t *testing.T, id any, tool string) <-chan *testutil.Response {
	out := make(chan *testutil.Response, 1)
	go func() {
		resp, err := r.client().Do(r.modernRequest(ctx, t, modernMsg(id, "tools/call", map[string]any{"name": tool}, nil), nil))
		if err != nil {
			t.Error(err)
		}
		out <- resp
	}()
	return out
}

// shutdownAsync runs the handler's Shutdown (bounded by wait) in the
// background; its result arrives on the channel.
func (r *rig) shutdownAsync() <-chan error {
	down := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		down <- r.h.Shutdown(sctx)
	}()
	return down
}

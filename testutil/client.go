package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"
)

// ProtocolVersion is the version the Client negotiates by default.
const ProtocolVersion = "2025-11-25"

// Client is a raw MCP Streamable HTTP client for black-box tests. It sends
// exactly the requests it is told to, with the headers a well-behaved
// client sends, and reports exactly what came back.
type Client struct {
	// URL is the MCP endpoint.
	URL string
	// HTTP is the client used; http.DefaultClient when nil.
	HTTP *http.Client
	// SessionID is sent as Mcp-Session-Id when not empty; Initialize sets it.
	SessionID string
	// ProtocolVersion is sent as MCP-Protocol-Version when not empty.
	ProtocolVersion string
	// Header, when set, is added to every request (after the headers
	// above): Mcp-Method for a 2026-07-28 request, say.
	Header map[string]string

	nextID atomic.Int64
}

// NewClient returns a client for the endpoint at url.
func NewClient(url string) *Client {
	return &Client{URL: url, HTTP: &http.Client{}}
}

// Response is what a POST got back: the status, headers and, for a 200, the
// messages it carried (one for JSON, every event for SSE).
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte    // the raw body for non-SSE answers
	Events   []Event   // the SSE events and comments, in order
	Messages []Message // the JSON-RPC messages, in order
}

// Last returns the final JSON-RPC message (the response to a request).
func (r *Response) Last() (Message, error) {
	if len(r.Messages) == 0 {
		return Message{}, fmt.Errorf("no JSON-RPC message in the %d answer (body %q)", r.Status, r.Body)
	}
	return r.Messages[len(r.Messages)-1], nil
}

// IsSSE reports whether the answer was an SSE stream.
func (r *Response) IsSSE() bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// NewRequest builds a request to the endpoint with the client's headers.
func (c *Client) NewRequest(ctx context.Context, method string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL, rd)
	if err != nil {
		return nil, fmt.Errorf("build %s request: %w", method, err)
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.SessionID != "" {
		req.Header.Set("Mcp-Session-Id", c.SessionID)
	}
	if c.ProtocolVersion != "" {
		req.Header.Set("MCP-Protocol-Version", c.ProtocolVersion)
	}
	for k, v := range c.Header {
		req.Header.Set(k, v)
	}
	return req, nil
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// Do sends req and reads the whole answer.
func (c *Client) Do(req *http.Request) (*Response, error) {
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	out := &Response{Status: resp.StatusCode, Header: resp.Header}
	if out.IsSSE() {
		rd := NewSSEReader(resp.Body)
		for {
			ev, err := rd.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return out, fmt.Errorf("read SSE answer: %w", err)
			}
			out.Events = append(out.Events, ev)
			if ev.HasMessage() {
				m, err := ev.Message()
				if err != nil {
					return out, err
				}
				out.Messages = append(out.Messages, m)
			}
		}
		return out, nil
	}
	if out.Body, err = io.ReadAll(resp.Body); err != nil {
		return out, fmt.Errorf("read answer: %w", err)
	}
	if len(bytes.TrimSpace(out.Body)) > 0 {
		var m Message
		if json.Unmarshal(out.Body, &m) == nil {
			out.Messages = append(out.Messages, m)
		}
	}
	return out, nil
}

// PostRaw POSTs body as it is.
func (c *Client) PostRaw(ctx context.Context, body []byte) (*Response, error) {
	req, err := c.NewRequest(ctx, http.MethodPost, body)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

// Post POSTs one JSON-RPC message built from v.
func (c *Client) Post(ctx context.Context, v any) (*Response, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	return c.PostRaw(ctx, body)
}

// Call sends a request with a fresh id and returns the whole answer.
func (c *Client) Call(ctx context.Context, method string, params any) (*Response, error) {
	msg := map[string]any{"jsonrpc": "2.0", "id": c.nextID.Add(1), "method": method}
	if params != nil {
		msg["params"] = params
	}
	return c.Post(ctx, msg)
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) (*Response, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	return c.Post(ctx, msg)
}

// Reply POSTs a result for a request the server sent.
func (c *Client) Reply(ctx context.Context, id json.RawMessage, result any) (*Response, error) {
	return c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// Initialize runs the handshake: initialize, which sets SessionID, then
// notifications/initialized. It fails unless both were accepted.
func (c *Client) Initialize(ctx context.Context) (Message, error) {
	c.SessionID = ""
	resp, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{"sampling": map[string]any{}, "roots": map[string]any{}},
		"clientInfo":      map[string]any{"name": "lifeline-testutil", "version": "1"},
	})
	if err != nil {
		return Message{}, err
	}
	if resp.Status != http.StatusOK {
		return Message{}, fmt.Errorf("initialize: status %d: %s", resp.Status, resp.Body)
	}
	m, err := resp.Last()
	if err != nil {
		return m, err
	}
	if m.Error != nil {
		return m, fmt.Errorf("initialize: %d %s", m.Error.Code, m.Error.Message)
	}
	c.SessionID = resp.Header.Get("Mcp-Session-Id")
	if c.SessionID == "" {
		return m, errors.New("initialize: no Mcp-Session-Id on the response")
	}
	c.ProtocolVersion = ProtocolVersion
	ack, err := c.Notify(ctx, "notifications/initialized", nil)
	if err != nil {
		return m, err
	}
	if ack.Status != http.StatusAccepted {
		return m, fmt.Errorf("notifications/initialized: status %d: %s", ack.Status, ack.Body)
	}
	return m, nil
}

// CallTool calls a tool and returns the whole answer.
func (c *Client) CallTool(ctx context.Context, name string, args map[string]any) (*Response, error) {
	return c.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
}

// Delete ends the session and returns the status.
func (c *Client) Delete(ctx context.Context) (*Response, error) {
	req, err := c.NewRequest(ctx, http.MethodDelete, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

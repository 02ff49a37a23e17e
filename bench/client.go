package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// ProtocolVersion is the version every client pins, so every peer speaks it.
const ProtocolVersion = "2025-11-25"

func slogDiscardLog() *log.Logger { return log.New(io.Discard, "", 0) }

// NewTransport returns an HTTP transport for n concurrent clients of one peer.
func NewTransport(n int) *http.Transport {
	return &http.Transport{
		MaxIdleConns:          n + 16,
		MaxIdleConnsPerHost:   n + 16,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 15 * time.Second,
		DisableCompression:    true,
	}
}

// Client is a minimal raw MCP client: one session, requests over HTTP/1.1;
// or, with Modern set, sessionless 2026-07-28 requests (see modern.go).
type Client struct {
	URL       string
	HTTP      *http.Client
	SessionID string
	// Modern makes every request a 2026-07-28 one: no initialize or
	// session, the version and method in headers and in params._meta.
	Modern bool
	nextID atomic.Int64
}

// NewClient returns a client of url using transport t.
func NewClient(url string, t http.RoundTripper) *Client {
	return &Client{URL: url, HTTP: &http.Client{Transport: t}}
}

// Message is the part of a JSON-RPC message the harness looks at.
type Message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (c *Client) newRequest(ctx context.Context, method string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL, rd)
	if err != nil {
		return nil, err
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
		req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
	}
	return req, nil
}

// Initialize runs initialize (pinning ProtocolVersion) and
// notifications/initialized.
func (c *Client) Initialize(ctx context.Context) error {
	if err := c.InitializeOnly(ctx); err != nil {
		return err
	}
	return c.Notify(ctx, "notifications/initialized", nil)
}

// InitializeOnly runs initialize and keeps the session id.
func (c *Client) InitializeOnly(ctx context.Context) error {
	c.SessionID = ""
	_, resp, err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "bench", "version": "1"},
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	c.SessionID = resp.Header.Get("Mcp-Session-Id")
	return nil
}

// Notify posts a notification and expects 202.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	body, _ := json.Marshal(m)
	req, err := c.newRequest(ctx, http.MethodPost, body)
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: status %d", method, resp.StatusCode)
	}
	return nil
}

// Call sends a request and returns its response message and the number of
// notifications/progress that came before it on the response's stream.
func (c *Client) Call(ctx context.Context, method string, params any) (Message, int, error) {
	m, _, err := c.callProgress(ctx, method, params)
	return m.Message, m.progress, err
}

type callResult struct {
	Message
	progress int
}

func (c *Client) call(ctx context.Context, method string, params any) (callResult, *http.Response, error) {
	return c.callProgress(ctx, method, params)
}

func (c *Client) callProgress(ctx context.Context, method string, params any) (callResult, *http.Response, error) {
	id := c.nextID.Add(1)
	pj, err := json.Marshal(params)
	if err != nil {
		return callResult{}, nil, err
	}
	if c.Modern {
		if pj, err = modernParams(params); err != nil {
			return callResult{}, nil, err
		}
	}
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, pj)
	req, err := c.newRequest(ctx, http.MethodPost, body)
	if err != nil {
		return callResult{}, nil, err
	}
	if c.Modern {
		setModernHeaders(req.Header, method, params)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return callResult{}, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return callResult{}, resp, fmt.Errorf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	want := fmt.Sprint(id)
	var out callResult
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		err = ReadSSE(resp.Body, func(data []byte) bool {
			var m Message
			if json.Unmarshal(data, &m) != nil {
				return true
			}
			if m.Method == "notifications/progress" {
				out.progress++
			}
			if string(m.ID) == want && m.Method == "" {
				out.Message = m
				return false
			}
			return true
		})
		if err == nil && out.ID == nil {
			err = fmt.Errorf("%s: stream ended without a response", method)
		}
	} else {
		err = json.NewDecoder(resp.Body).Decode(&out.Message)
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	if err == nil && out.Error != nil {
		err = fmt.Errorf("%s: %s", method, out.Error.Message)
	}
	return out, resp, err
}

// CallTool calls a tool; progress adds a progress token.
func (c *Client) CallTool(ctx context.Context, name string, args map[string]any, progress bool) (Message, int, error) {
	p := map[string]any{"name": name, "arguments": args}
	if progress {
		p["_meta"] = map[string]any{"progressToken": "p"}
	}
	return c.Call(ctx, "tools/call", p)
}

// Delete sends DELETE for the session and returns its status.
func (c *Client) Delete(ctx context.Context) (int, error) {
	req, err := c.newRequest(ctx, http.MethodDelete, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// OpenGet opens the session's GET stream; the caller owns the body.
func (c *Client) OpenGet(ctx context.Context) (*http.Response, error) {
	req, err := c.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET: status %d", resp.StatusCode)
	}
	return resp, nil
}

// ReadSSE calls fn with the data of each event until fn returns false, the
// stream ends (nil) or fails.
func ReadSSE(r io.Reader, fn func(data []byte) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 4<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if len(data) > 0 {
				if !fn(data) {
					return nil
				}
				data = data[:0]
			}
			continue
		}
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	return sc.Err()
}

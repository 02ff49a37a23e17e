package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// ModernVersion is the sessionless protocol version a Modern client speaks.
const ModernVersion = mcp.ProtocolVersion20260728

// modernParams is params (a map, or nil) with the _meta every 2026-07-28
// request carries merged into its own _meta: the protocol version and the
// (empty) client capabilities.
func modernParams(params any) ([]byte, error) {
	p := map[string]any{}
	if params != nil {
		in, ok := params.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("modern request params are %T, want map[string]any", params)
		}
		for k, v := range in {
			p[k] = v
		}
	}
	meta := map[string]any{
		mcp.MetaKeyProtocolVersion:    ModernVersion,
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}
	if m, ok := p["_meta"].(map[string]any); ok {
		for k, v := range m {
			meta[k] = v
		}
	}
	p["_meta"] = meta
	return json.Marshal(p)
}

// setModernHeaders sets the headers a 2026-07-28 POST carries: the version,
// Mcp-Method and, for a named method, Mcp-Name.
func setModernHeaders(h http.Header, method string, params any) {
	h.Set("MCP-Protocol-Version", ModernVersion)
	h.Set(mcp.HeaderMethod, method)
	if p, ok := params.(map[string]any); ok {
		if name, ok := p["name"].(string); ok {
			h.Set(mcp.HeaderName, name)
		} else if uri, ok := p["uri"].(string); ok {
			h.Set(mcp.HeaderName, uri)
		}
	}
}

// Listen is an open subscriptions/listen stream whose acknowledgement has
// been read; the rest of its body is the caller's to read or leave.
type Listen struct {
	Resp *http.Response
	// Rest is what was read past the acknowledgement's event.
	Rest []byte
}

// Close closes the stream's body.
func (l *Listen) Close() { l.Resp.Body.Close() }

// ackTimeout bounds how long OpenListen waits for the acknowledgement.
const ackTimeout = 20 * time.Second

// maxAck bounds what OpenListen reads while it waits for the
// acknowledgement.
const maxAck = 4096

// OpenListen sends a 2026-07-28 subscriptions/listen with the filter and
// reads the stream up to the end of its first event, which must be
// notifications/subscriptions/acknowledged within ackTimeout. ctx must
// outlive the stream: cancelling it ends the stream. It reads in small pieces so
// that an idle stream holds no reader buffer on the client side.
func (c *Client) OpenListen(ctx context.Context, filter map[string]any) (*Listen, error) {
	id := c.nextID.Add(1)
	pj, err := modernParams(map[string]any{"notifications": filter})
	if err != nil {
		return nil, err
	}
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":%s}`, id, pj)
	req, err := c.newRequest(ctx, http.MethodPost, body)
	if err != nil {
		return nil, err
	}
	setModernHeaders(req.Header, "subscriptions/listen", nil)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("subscriptions/listen: status %d: %s", resp.StatusCode, b)
	}
	// The acknowledgement must come within ackTimeout: past it the body is
	// closed, which ends the read below.
	timer := time.AfterFunc(ackTimeout, func() { resp.Body.Close() })
	defer timer.Stop()
	var got []byte
	var buf [256]byte
	for len(got) < maxAck {
		n, err := resp.Body.Read(buf[:])
		got = append(got, buf[:n]...)
		for {
			ev, rest, ok := bytes.Cut(got, []byte("\n\n"))
			if !ok {
				break
			}
			got = rest
			if !bytes.Contains(ev, []byte("data:")) {
				continue // a comment
			}
			if !bytes.Contains(ev, []byte(`"notifications/subscriptions/acknowledged"`)) {
				resp.Body.Close()
				return nil, fmt.Errorf("subscriptions/listen: first event %q, want the acknowledgement", ev)
			}
			return &Listen{Resp: resp, Rest: bytes.Clone(got)}, nil
		}
		if err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("subscriptions/listen: before the acknowledgement: %w", err)
		}
	}
	resp.Body.Close()
	return nil, errors.New("subscriptions/listen: no acknowledgement in the first 4 KiB")
}

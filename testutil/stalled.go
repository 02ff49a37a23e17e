package testutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// StalledReader is a client that sends one HTTP request over a raw TCP
// connection with a tiny receive buffer and then never reads again, like a
// client that hung or a proxy that stopped forwarding. The server's writes
// to it block once the kernel buffers are full.
type StalledReader struct {
	conn net.Conn
	br   *bufio.Reader
	resp *http.Response // set by Status
}

// DialStalled connects to the server of endpoint (an http:// URL) and sends
// a request with the given method, headers and body.
func DialStalled(ctx context.Context, endpoint, method string, header map[string]string, body string) (*StalledReader, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", endpoint, err)
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", u.Host, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u.RequestURI(), u.Host)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(b.String())); err != nil {
		conn.Close()
		return nil, fmt.Errorf("send request: %w", err)
	}
	return &StalledReader{conn: conn, br: bufio.NewReaderSize(conn, 256)}, nil
}

// DialStalledStream opens a session's GET stream as a stalled reader.
func DialStalledStream(ctx context.Context, endpoint, sessionID string) (*StalledReader, error) {
	return DialStalled(ctx, endpoint, "GET", map[string]string{
		"Accept":               "text/event-stream",
		"Mcp-Session-Id":       sessionID,
		"MCP-Protocol-Version": ProtocolVersion,
	}, "")
}

// Status reads just the head of the answer (status line and headers, a
// few hundred bytes), then the reader stalls again. It returns the status
// line, e.g. "HTTP/1.1 200 OK", and waits until ctx ends.
func (s *StalledReader) Status(ctx context.Context) (string, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = s.conn.SetReadDeadline(dl)
		defer s.conn.SetReadDeadline(time.Time{})
	}
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		return "", fmt.Errorf("read the answer's head: %w", err)
	}
	s.resp = resp
	return resp.Proto + " " + resp.Status, nil
}

// ReadBody stops stalling: it reads the rest of the answer's body (after
// Status) until the server ends it or ctx ends, and returns what arrived.
// A body cut short by the server is not an error.
func (s *StalledReader) ReadBody(ctx context.Context) ([]byte, error) {
	if s.resp == nil {
		return nil, errors.New("ReadBody before Status")
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = s.conn.SetReadDeadline(dl)
		defer s.conn.SetReadDeadline(time.Time{})
	}
	body, err := io.ReadAll(s.resp.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return body, fmt.Errorf("read the answer's body: %w", err)
	}
	return body, nil
}

// Close closes the connection.
func (s *StalledReader) Close() error { return s.conn.Close() }

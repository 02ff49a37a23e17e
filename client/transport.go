package lifelineclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Transport is mcp-go's Streamable HTTP client transport that replaces a
// lost session and resumes broken streams (see the package documentation).
// It implements transport.Interface, transport.BidirectionalInterface and
// transport.HTTPConnection, and reports RequiresLegacyProtocol as the
// transport it wraps does. Its methods are safe for concurrent use.
type Transport struct {
	inner  *transport.StreamableHTTP
	cfg    Config
	logger *slog.Logger

	notifyMu sync.RWMutex
	notify   func(mcp.JSONRPCNotification)

	mu sync.Mutex
	// init is the first initialize that went through, replayed to start
	// a new session; nil before.
	init *transport.JSONRPCRequest
	// session is the session id the current generation holds ("" for
	// none: nothing to replace), gen counts sessions started.
	session string
	gen     uint64
	version string  // the negotiated protocol version
	flight  *flight // the re-initialize in progress, if any
	reinits uint64  // re-initializes sent, for request ids

	// life ends with Close: it bounds re-initializes.
	life context.Context
	end  context.CancelFunc
	// bg counts the goroutines a re-initialize runs on; Add under mu while
	// life lasts, so that Close, which ends life under mu, then waits for
	// them all.
	bg sync.WaitGroup
}

// flight is one re-initialize that concurrent calls share: done is closed
// once err is set.
type flight struct {
	done chan struct{}
	err  error
}

// NewStreamableHTTP returns a Transport with the zero Config: it is
// transport.NewStreamableHTTP's drop-in replacement.
func NewStreamableHTTP(serverURL string, options ...transport.StreamableHTTPCOption) (*Transport, error) {
	return Config{}.NewStreamableHTTP(serverURL, options...)
}

// NewClient returns mcp-go's client.Client on a Transport with the zero
// Config: client.NewStreamableHttpClient's drop-in replacement.
func NewClient(serverURL string, options ...transport.StreamableHTTPCOption) (*client.Client, error) {
	t, err := NewStreamableHTTP(serverURL, options...)
	if err != nil {
		return nil, err
	}
	return client.NewClient(t), nil
}

// NewStreamableHTTP returns a Transport configured by c that wraps
// transport.NewStreamableHTTP(serverURL, options...). It fails if options
// set the HTTP client (transport.WithHTTPBasicClient): give it as
// c.HTTPClient instead.
func (c Config) NewStreamableHTTP(serverURL string, options ...transport.StreamableHTTPCOption) (*Transport, error) {
	c.Resume = c.Resume.effective()
	var first []transport.StreamableHTTPCOption
	if c.Logger == nil {
		c.Logger = slog.Default()
	} else {
		first = append(first, transport.WithHTTPLogger(c.Logger))
	}
	base := c.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc := *base
	hc.Transport = &roundTripper{base: rt, policy: c.Resume, logger: c.Logger}
	opts := append(append(first, transport.WithHTTPBasicClient(&hc)), options...)
	inner, err := transport.NewStreamableHTTP(serverURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("lifelineclient: %w", err)
	}
	if !usesClient(inner, &hc) {
		return nil, errors.New("lifelineclient: the options set the HTTP client (transport.WithHTTPBasicClient); give it as Config.HTTPClient, so that its streams can be resumed")
	}
	t := &Transport{inner: inner, cfg: c, logger: c.Logger}
	t.life, t.end = context.WithCancel(context.Background())
	hc.Transport.(*roundTripper).gone = t.sessionGone
	if inner.IsOAuthEnabled() {
		hc.Transport.(*roundTripper).auth = inner.GetOAuthHandler().GetAuthorizationHeader
	}
	return t, nil
}

// usesClient reports whether inner sends through hc: false when an option
// replaced it. It looks at mcp-go's unexported field, and says true when it
// cannot tell.
func usesClient(inner *transport.StreamableHTTP, hc *http.Client) bool {
	f := reflect.ValueOf(inner).Elem().FieldByName("httpClient")
	if !f.IsValid() || f.Kind() != reflect.Pointer {
		return true
	}
	return f.Pointer() == reflect.ValueOf(hc).Pointer()
}

// Unwrap returns the mcp-go transport that t wraps.
func (t *Transport) Unwrap() *transport.StreamableHTTP { return t.inner }

// Start implements transport.Interface.
func (t *Transport) Start(ctx context.Context) error { return t.inner.Start(ctx) }

// Close implements transport.Interface: it ends a re-initialize in
// progress and waits for it (bounded by closeWait), then ends the session
// (DELETE) as mcp-go's transport does, the new one if the re-initialize
// made one.
func (t *Transport) Close() error {
	t.mu.Lock()
	t.end()
	t.mu.Unlock()
	done := make(chan struct{})
	go func() { t.bg.Wait(); close(done) }()
	timer := time.NewTimer(closeWait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.logger.Warn("lifelineclient: Close: a re-initialize did not end in time (OnSessionReplaced still running?)", "waited", closeWait)
	}
	return t.inner.Close()
}

// closeWait bounds how long Close waits for a re-initialize it ended: the
// initialize is cut short at once, so only an OnSessionReplaced or a
// notification handler that blocks can use it up.
const closeWait = 5 * time.Second

// GetSessionId implements transport.Interface.
func (t *Transport) GetSessionId() string { return t.inner.GetSessionId() }

// SendNotification implements transport.Interface. A notification is
// never retried on a new session.
func (t *Transport) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	return t.inner.SendNotification(ctx, n)
}

// SetNotificationHandler implements transport.Interface. The handler also
// gets the list_changed notifications synthesized after a new session.
func (t *Transport) SetNotificationHandler(handler func(mcp.JSONRPCNotification)) {
	t.notifyMu.Lock()
	t.notify = handler
	t.notifyMu.Unlock()
	t.inner.SetNotificationHandler(handler)
}

// SetRequestHandler implements transport.BidirectionalInterface: the
// handler answers the server's requests on every session.
func (t *Transport) SetRequestHandler(handler transport.RequestHandler) {
	t.inner.SetRequestHandler(handler)
}

// SetProtocolVersion implements transport.HTTPConnection.
func (t *Transport) SetProtocolVersion(version string) {
	t.mu.Lock()
	t.version = version
	t.mu.Unlock()
	t.inner.SetProtocolVersion(version)
}

// RequiresLegacyProtocol reports whether the wrapped transport can only
// speak versions before 2026-07-28 (it listens on the GET stream).
func (t *Transport) RequiresLegacyProtocol() bool { return t.inner.RequiresLegacyProtocol() }

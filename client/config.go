package lifelineclient

import (
	"log/slog"
	"net/http"
	"time"
)

// Defaults of ResumePolicy.
const (
	DefaultResumeAttempts = 5
	DefaultResumeDelay    = time.Second
	DefaultMinResumeDelay = 10 * time.Millisecond
	DefaultMaxResumeDelay = 30 * time.Second
	// DefaultMaxEventBytes bounds one server-sent event held while it
	// arrives: an event longer than that fails its stream.
	DefaultMaxEventBytes = 32 << 20
)

// ResumePolicy says how a broken stream is resumed. Zero fields take the
// defaults above; a negative Attempts turns resuming off.
type ResumePolicy struct {
	// Attempts is how many GETs with Last-Event-ID one break may take;
	// the count starts again once a resumed stream delivers an event.
	Attempts int
	// Delay is the wait before the first attempt when the server sent no
	// retry field. With one, the server's value is used.
	Delay time.Duration
	// MinDelay and MaxDelay bound every wait, the server's value and its
	// doublings included: each failed attempt doubles the wait.
	MinDelay, MaxDelay time.Duration
	// MaxEventBytes bounds one event held while it arrives.
	MaxEventBytes int
}

// effective returns p with its defaults applied.
func (p ResumePolicy) effective() ResumePolicy {
	if p.Attempts == 0 {
		p.Attempts = DefaultResumeAttempts
	}
	if p.Delay <= 0 {
		p.Delay = DefaultResumeDelay
	}
	if p.MinDelay <= 0 {
		p.MinDelay = DefaultMinResumeDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxResumeDelay
	}
	if p.MaxDelay < p.MinDelay {
		p.MaxDelay = p.MinDelay
	}
	if p.MaxEventBytes <= 0 {
		p.MaxEventBytes = DefaultMaxEventBytes
	}
	return p
}

// delay returns the wait before attempt n (from 1), given the server's
// retry field (hasRetry) or the policy's Delay.
func (p ResumePolicy) delay(n int, retry time.Duration, hasRetry bool) time.Duration {
	d := p.Delay
	if hasRetry {
		d = retry
	}
	d = max(d, p.MinDelay) // a zero retry field doubles too
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(max(d, p.MinDelay), p.MaxDelay)
}

// Config holds what this package adds to mcp-go's transport options. The
// zero Config is ready to use.
type Config struct {
	// HTTPClient is the client requests go through; its Transport is
	// wrapped to resume broken streams. Give it here, not with
	// transport.WithHTTPBasicClient (NewStreamableHTTP refuses that
	// option, as the streams could not be resumed). Default a new
	// http.Client on http.DefaultTransport.
	HTTPClient *http.Client
	// OnSessionReplaced, when set, is called after a lost session was
	// replaced, with the old and the new session id, before the
	// synthesized list_changed notifications are delivered. It runs on
	// the transport's re-initializing goroutine, and the calls waiting
	// for the new session go on once it returns: it must not block.
	OnSessionReplaced func(oldID, newID string)
	// Resume says how broken streams are resumed.
	Resume ResumePolicy
	// Logger receives what the transport does about lost sessions and
	// broken streams; when set, it is also mcp-go's transport's logger
	// (transport.WithHTTPLogger among the options overrides that).
	// Default slog.Default().
	Logger *slog.Logger
}

package streamable_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func loggerAt(out *lockedBuffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))
}

// A healthy server's sessions (created, called, streamed, deleted,
// expired) write nothing at Info; at Debug each end is one line naming the
// session and the cause.
func TestHealthySessionsAreQuietAtInfo(t *testing.T) {
	var info, debug lockedBuffer
	both := slog.New(teeHandler{loggerAt(&info, slog.LevelInfo).Handler(), loggerAt(&debug, slog.LevelDebug).Handler()})
	r := newRig(t, streamable.Config{Logger: both, IdleTTL: 200 * time.Millisecond})
	ctx := testutil.Context(t, wait)
	var deleted, expired []*testutil.Client
	for i := range 10 {
		c := r.session()
		s := r.stream(c)
		if resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"}); err != nil || resp.Status != http.StatusOK {
			t.Fatalf("echo: %v %+v", err, resp)
		}
		s.Close()
		if i%2 == 0 {
			if resp, err := c.Delete(ctx); err != nil || resp.Status != http.StatusOK {
				t.Fatalf("DELETE: %v %+v", err, resp)
			}
			deleted = append(deleted, c)
		} else {
			expired = append(expired, c)
		}
	}
	testutil.Eventually(t, wait, "the idle sessions to expire", func() bool { return r.h.Stats().Sessions == 0 })
	if out := info.String(); out != "" {
		t.Fatalf("a healthy server logged at Info:\n%s", out)
	}
	out := debug.String()
	for _, c := range deleted {
		if !containsAll(out, "session ended", "session="+sessionName(c.SessionID), "DELETE") {
			t.Fatalf("no Debug line for the DELETE of %s:\n%s", sessionName(c.SessionID), out)
		}
	}
	for _, c := range expired {
		if !containsAll(out, "session ended", "session="+sessionName(c.SessionID), "idle TTL") {
			t.Fatalf("no Debug line for the expiry of %s:\n%s", sessionName(c.SessionID), out)
		}
	}
}

// teeHandler writes each record to both handlers (each at its own level).
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range []slog.Handler{t.a, t.b} {
		if h.Enabled(ctx, r.Level) {
			if err := h.Handle(ctx, r.Clone()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{t.a.WithGroup(name), t.b.WithGroup(name)}
}

// A dead peer is a Warn line naming the session.
func TestDeadPeerIsLoggedAtWarn(t *testing.T) {
	var logs lockedBuffer
	r := newRig(t, streamable.Config{Logger: loggerAt(&logs, slog.LevelWarn)})
	c := r.session()
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	ping, err := s.NextMatching(ctx, isPing)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reply(ctx, ping.ID, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, "the dead peer's Warn line", func() bool {
		return containsAll(logs.String(), "level=WARN", "peer dead", "session="+sessionName(c.SessionID))
	})
}

// A store outage is one Warn line when it begins and one Info line when it
// ends, however many requests, sweeps and renewals fail in between.
func TestStoreOutageIsLoggedOnceAndItsEnd(t *testing.T) {
	var logs lockedBuffer
	rs := testutil.StartRedisServer(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
	store := redisstore.New(rc, redisstore.Options{Prefix: "outagelog:", OpTimeout: 100 * time.Millisecond})
	h := streamable.New(demotools.NewServer("lifeline-test", "1"), streamable.Config{
		Store:   store,
		IdleTTL: 400 * time.Millisecond, // the sweeper runs every 100 ms
		Logger:  loggerAt(&logs, slog.LevelInfo),
	})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = rs.Resume()
		_ = h.Shutdown(ctx)
		ts.Close()
		_ = store.Close()
		_ = rc.Close()
	})
	ctx := testutil.Context(t, wait)
	var clients []*testutil.Client
	for range 3 {
		c := testutil.NewClient(ts.URL)
		if _, err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	if err := rs.Pause(); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
		if err != nil || resp.Status != http.StatusServiceUnavailable {
			t.Fatalf("call during the outage: %v %+v", err, resp)
		}
	}
	testutil.Eventually(t, wait, "the outage's Warn line", func() bool {
		return strings.Contains(logs.String(), "the store is unreachable")
	})
	if err := rs.Resume(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, "a call to succeed again", func() bool {
		resp, err := clients[0].CallTool(ctx, "echo", map[string]any{"text": "x"})
		return err == nil && resp.Status == http.StatusOK
	})
	testutil.Eventually(t, wait, "the store-back Info line", func() bool {
		return strings.Contains(logs.String(), "the store answers again")
	})
	out := logs.String()
	if n := strings.Count(out, "the store is unreachable"); n != 1 {
		t.Fatalf("%d outage lines, want 1:\n%s", n, out)
	}
	if strings.Contains(out, "store check failed") {
		t.Fatalf("a line per session at Info during the outage:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		switch {
		case strings.Contains(line, "the store is unreachable") && strings.Contains(line, "level=WARN"):
		case strings.Contains(line, "the store answers again") && strings.Contains(line, "level=INFO"):
		default:
			t.Fatalf("unexpected line at Info during an outage: %s", line)
		}
	}
}

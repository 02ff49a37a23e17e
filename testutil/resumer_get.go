package testutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
)

// getLoop keeps the session's GET stream open until ctx ends: it
// reconnects after every end, resuming from the last event id it
// received, waiting the stream's retry (or MinBackoff) first and doubling
// the wait, up to MaxBackoff, while reconnects fail.
func (c *ResumingClient) getLoop(ctx context.Context) {
	defer c.wg.Done()
	backoff := c.cfg.MinBackoff
	opened := false
	for ctx.Err() == nil {
		s := c.session()
		retry, ok, err := c.getOnce(ctx, s, opened)
		if ctx.Err() != nil {
			return
		}
		if ok {
			opened = true
			backoff = c.cfg.MinBackoff
			if retry > 0 {
				backoff = retry
			}
		}
		if errors.Is(err, errGone) {
			if err := c.reinit(ctx, s.gen); err != nil {
				c.logf("GET stream: %v", err)
			}
			backoff = c.cfg.MinBackoff
			continue
		}
		if err != nil {
			c.logf("GET stream: %v; reconnecting in %v", err, backoff)
		}
		if sleepCtx(ctx, backoff) != nil {
			return
		}
		if !ok {
			backoff = min(2*backoff, c.cfg.MaxBackoff)
		}
	}
}

// getOnce opens one GET stream connection for s (resuming from
// s.lastGetID when set) and reads it until it ends. It reports the retry
// the stream asked for, whether it was opened (200), and why it ended:
// errGone for a 404.
func (c *ResumingClient) getOnce(ctx context.Context, s clientSession, reconnect bool) (retry time.Duration, ok bool, err error) {
	req, err := c.newRequest(ctx, s, http.MethodGet, nil)
	if err != nil {
		return 0, false, err
	}
	if s.lastGetID != "" {
		req.Header.Set("Last-Event-ID", s.lastGetID)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, false, fmt.Errorf("GET: %w", err)
	}
	defer drainClose(resp)
	if resp.StatusCode == http.StatusNotFound {
		return 0, false, errGone
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		return 0, false, fmt.Errorf("GET answered %d %s", resp.StatusCode, mt)
	}
	c.mu.Lock()
	if reconnect {
		c.stats.Reconnects++
	}
	if len(c.getConns) == getConnHistory {
		c.getConns = append(c.getConns[:0], c.getConns[1:]...)
	}
	c.getConns = append(c.getConns, GetConn{Opened: time.Now(), Resumed: s.lastGetID != ""})
	conn := len(c.getConns) - 1
	c.mu.Unlock()

	defer func() {
		c.mu.Lock()
		c.getConns[conn].Ended = time.Now()
		c.mu.Unlock()
	}()
	rd := NewStrictSSEReader(resp.Body)
	for events := 0; ; events++ {
		ev, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return retry, true, nil
			}
			return retry, true, fmt.Errorf("after %d events (resumed from %q): %w", events, s.lastGetID, err)
		}
		if ms, perr := strconv.Atoi(ev.Retry); perr == nil && ms > 0 {
			retry = time.Duration(ms) * time.Millisecond
		}
		var m Message
		var msgErr error
		if ev.HasMessage() {
			m, msgErr = ev.Message()
		}
		c.mu.Lock()
		if ev.HasMessage() {
			now := time.Now()
			if c.getConns[conn].FirstEvent.IsZero() {
				c.getConns[conn].FirstEvent = now
			}
			c.getConns[conn].LastEvent = now
		}
		if msgErr == nil {
			if tag, seq, ok := taggedNote(m); ok {
				c.notes.arrived(tag, seq)
			}
		}
		if ev.ID != "" && c.sess.gen == s.gen {
			c.sess.lastGetID = ev.ID
		}
		c.mu.Unlock()
		if msgErr == nil && m.IsRequest() {
			c.reply(s, m)
		}
	}
}

// drainClose reads a little of what is left of resp's body (so the
// connection may be reused) and closes it.
func drainClose(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
}

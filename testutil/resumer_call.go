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
	"strconv"
	"time"
)

// CallResult is how a ResumingClient's tool call ended.
type CallResult struct {
	// Final is the call's JSON-RPC response.
	Final Message
	// Notes are the distinct notifications the call's own stream carried
	// (its POST stream and the GETs that resumed it), in arrival order.
	Notes []Message
	// Attempts is how many requests were sent (more than 1 when one got
	// no answer at all); Resumes how many GETs resumed a cut stream.
	Attempts, Resumes int
	// Duplicates counts notifications the call's stream carried again.
	Duplicates int
}

// Errors a call's attempt ends with, other than a result.
var (
	// errNoAnswer: the request got no answer at all (a transport error
	// before any event, a 503): it may be sent again as a new request.
	errNoAnswer = errors.New("no answer")
	// errHung: no final answer within CallTimeout.
	errHung = errors.New("hung")
)

// CallTool calls tool name with args, resuming its stream after cuts, and
// returns its answer. It fails for an error answer or a result with
// isError. A request that got no answer at all (transport error, 503, 404:
// then the client re-initializes) is sent again, up to CallAttempts.
func (c *ResumingClient) CallTool(ctx context.Context, name string, args map[string]any) (CallResult, error) {
	return c.call(ctx, name, func() map[string]any { return args }, false)
}

// Notify calls lifeline_notify_session with count and bytes and a tag of
// its own (each attempt a fresh one), and expects the notifications its
// result says were sent on the GET stream, each once (Stats,
// WaitDelivered).
func (c *ResumingClient) Notify(ctx context.Context, count, size int) (CallResult, error) {
	var tag string
	res, err := c.call(ctx, "lifeline_notify_session", func() map[string]any {
		tag = fmt.Sprintf("%s-%d", c.cfg.Name, c.nextTag.Add(1))
		return map[string]any{"count": count, "bytes": size, "tag": tag}
	}, false)
	if err != nil {
		return res, err
	}
	text := resultText(res.Final)
	var sent, refused int
	if _, serr := fmt.Sscanf(text, "sent %d notifications", &sent); serr != nil {
		c.countFailure()
		return res, fmt.Errorf("lifeline_notify_session answered %q", text)
	}
	_, _ = fmt.Sscanf(text, "sent %d notifications, %d refused", &sent, &refused)
	c.mu.Lock()
	c.notes.expect(tag, sent)
	c.stats.NotesRefused += int64(refused)
	c.mu.Unlock()
	return res, nil
}

// Progress calls lifeline_progress with steps and delayMS and a progress
// token, and checks that its stream carried each of its steps progress
// and steps log notifications once.
func (c *ResumingClient) Progress(ctx context.Context, steps, delayMS int) (CallResult, error) {
	res, err := c.call(ctx, "lifeline_progress", func() map[string]any {
		return map[string]any{"steps": steps, "delay_ms": delayMS}
	}, true)
	if err != nil {
		return res, err
	}
	progress, logs := 0, 0
	for _, m := range res.Notes {
		switch {
		case m.Method == "notifications/progress":
			progress++
		case m.Method == "notifications/message" && bytes.Contains(m.Params, []byte(`"lifeline_progress"`)):
			logs++
		}
	}
	got := int64(min(progress, steps) + min(logs, steps))
	c.mu.Lock()
	c.stats.NotesSent += int64(2 * steps)
	c.stats.NotesReceived += got
	c.stats.NotesLost += int64(2*steps) - got
	c.mu.Unlock()
	return res, nil
}

func (c *ResumingClient) countFailure() {
	c.mu.Lock()
	c.stats.Failures++
	c.mu.Unlock()
}

// call runs one tool call: args gives each attempt's arguments.
func (c *ResumingClient) call(parent context.Context, name string, args func() map[string]any, progress bool) (CallResult, error) {
	c.mu.Lock()
	c.stats.Calls++
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(parent, c.cfg.CallTimeout)
	defer cancel()
	var res CallResult
	backoff := c.cfg.MinBackoff
	var err error
	for res.Attempts < c.cfg.CallAttempts {
		res.Attempts++
		s := c.session()
		id := c.nextID.Add(1)
		params := map[string]any{"name": name, "arguments": args()}
		if progress {
			params["_meta"] = map[string]any{"progressToken": fmt.Sprintf("%s-p%d", c.cfg.Name, id)}
		}
		err = c.attempt(ctx, s, id, params, &res)
		if err == nil || (!errors.Is(err, errNoAnswer) && !errors.Is(err, errGone)) {
			break
		}
		if ctx.Err() != nil {
			err = errHung
			break
		}
		c.mu.Lock()
		c.stats.Retries++
		c.mu.Unlock()
		c.logf("%s: %v; sending it again", name, err)
		if errors.Is(err, errGone) {
			if rerr := c.reinit(ctx, s.gen); rerr != nil {
				err = rerr
			}
			continue
		}
		if sleepCtx(ctx, backoff) != nil {
			err = errHung
			break
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
	if err == nil && res.Final.Error != nil {
		err = fmt.Errorf("%s answered error %d: %s", name, res.Final.Error.Code, res.Final.Error.Message)
	}
	if err == nil && isToolError(res.Final) {
		err = fmt.Errorf("%s failed: %s", name, resultText(res.Final))
	}
	c.mu.Lock()
	c.stats.NotesDuplicated += int64(res.Duplicates)
	switch {
	case err == nil:
	case parent.Err() != nil:
		// Abandoned by the caller: neither failed nor hung.
	case errors.Is(err, errHung) || ctx.Err() != nil:
		c.stats.Hung++
		err = fmt.Errorf("%s: no answer within %v: %w", name, c.cfg.CallTimeout, errHung)
	default:
		c.stats.Failures++
	}
	c.mu.Unlock()
	if err != nil {
		c.logf("%s: %v", name, err)
	}
	return res, err
}

// attempt sends one request and follows its answer, resuming a cut
// stream, until the final response; see call.
func (c *ResumingClient) attempt(ctx context.Context, s clientSession, id int64, params map[string]any, res *CallResult) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	if err != nil {
		return fmt.Errorf("encode the call: %w", err)
	}
	req, err := c.newRequest(ctx, s, http.MethodPost, body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return errHung
		}
		return fmt.Errorf("POST: %v: %w", err, errNoAnswer)
	}
	defer drainClose(resp)
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return errGone
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusTooManyRequests:
		return fmt.Errorf("POST answered %d: %w", resp.StatusCode, errNoAnswer)
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("POST answered %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	want := strconv.FormatInt(id, 10)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		if err != nil {
			if ctx.Err() != nil {
				return errHung
			}
			return fmt.Errorf("read the JSON answer: %v: %w", err, errNoAnswer)
		}
		var m Message
		if err := json.Unmarshal(b, &m); err != nil || string(m.ID) != want {
			return fmt.Errorf("the JSON answer is not the response to id %s: %q", want, b)
		}
		res.Final = m
		return nil
	}
	cs := &callStream{c: c, s: s, want: want, res: res, seen: make(map[string]bool)}
	done, err := cs.read(resp.Body)
	if done {
		return nil
	}
	if ctx.Err() != nil {
		return errHung
	}
	if cs.lastID == "" {
		if cs.messages > 0 {
			return fmt.Errorf("the call's stream was cut (%v) after %d messages, none with an event id to resume from", err, cs.messages)
		}
		return fmt.Errorf("the call's stream was cut before its first event (%v): %w", err, errNoAnswer)
	}
	return cs.resume(ctx, err)
}

// callStream follows one call's stream: the POST's SSE answer, then the
// GETs that resume it.
type callStream struct {
	c        *ResumingClient
	s        clientSession
	want     string // the call's JSON-RPC id
	res      *CallResult
	seen     map[string]bool // notifications by method and params
	lastID   string          // the last event id received
	retry    time.Duration   // the stream's retry field
	messages int             // messages received
}

// read reads an SSE body until the call's response (true) or the end.
func (cs *callStream) read(body io.Reader) (bool, error) {
	rd := NewStrictSSEReader(body)
	for {
		ev, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // ended before the response
			}
			return false, err
		}
		if ms, perr := strconv.Atoi(ev.Retry); perr == nil && ms > 0 {
			cs.retry = time.Duration(ms) * time.Millisecond
		}
		if ev.HasMessage() {
			m, err := ev.Message()
			if err != nil {
				return false, err
			}
			cs.messages++
			switch {
			case m.IsRequest():
				cs.c.reply(cs.s, m)
			case m.IsNotification():
				key := m.Method + "\x00" + string(m.Params)
				if cs.seen[key] {
					cs.res.Duplicates++
				} else {
					cs.seen[key] = true
					cs.res.Notes = append(cs.res.Notes, m)
				}
			case string(m.ID) == cs.want:
				cs.res.Final = m
				return true, nil
			}
		}
		if ev.ID != "" {
			cs.lastID = ev.ID
		}
	}
}

// resume GETs the rest of the call's stream with Last-Event-ID until the
// response arrives, up to ResumeRetries GETs, waiting the stream's retry
// (or MinBackoff), doubled while GETs fail, before each.
func (cs *callStream) resume(ctx context.Context, cut error) error {
	c := cs.c
	backoff := c.cfg.MinBackoff
	if cs.retry > 0 {
		backoff = cs.retry
	}
	last := cut
	for range c.cfg.ResumeRetries {
		if sleepCtx(ctx, backoff) != nil {
			return errHung
		}
		req, err := c.newRequest(ctx, cs.s, http.MethodGet, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Last-Event-ID", cs.lastID)
		resp, err := c.hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return errHung
			}
			last = err
			backoff = min(2*backoff, c.cfg.MaxBackoff)
			continue
		}
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode == http.StatusNotFound {
			drainClose(resp)
			_ = c.reinit(ctx, cs.s.gen)
			return errors.New("the session ended before the call's stream could be resumed (404)")
		}
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusTooManyRequests {
			// The server says the stream cannot be resumed (an id it
			// does not hold, say): asking again will not change that.
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			drainClose(resp)
			return fmt.Errorf("resuming GET answered %d: %s", resp.StatusCode, bytes.TrimSpace(b))
		}
		if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
			drainClose(resp)
			last = fmt.Errorf("resuming GET answered %d %s", resp.StatusCode, mt)
			backoff = min(2*backoff, c.cfg.MaxBackoff)
			continue
		}
		cs.res.Resumes++
		c.mu.Lock()
		c.stats.Resumes++
		c.mu.Unlock()
		before := cs.messages
		done, err := cs.read(resp.Body)
		drainClose(resp)
		if done {
			return nil
		}
		if ctx.Err() != nil {
			return errHung
		}
		last = err
		if cs.messages > before {
			backoff = c.cfg.MinBackoff
			if cs.retry > 0 {
				backoff = cs.retry
			}
		} else {
			backoff = min(2*backoff, c.cfg.MaxBackoff)
		}
	}
	return fmt.Errorf("the call's stream could not be resumed in %d GETs (last: %v)", c.cfg.ResumeRetries, last)
}

// resultText returns the text of a tools/call result's first content item.
func resultText(m Message) string {
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(m.Result, &r) != nil || len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// isToolError reports whether a tools/call result has isError set.
func isToolError(m Message) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(m.Result, &r) == nil && r.IsError
}

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
	"time"
)

// Stream is an open standalone GET stream. A goroutine reads it into a
// buffer; Close stops and joins that goroutine.
type Stream struct {
	// Status and Header are the GET's answer; Body is its body when the
	// answer was not a 200 stream.
	Status int
	Header http.Header
	Body   []byte

	c        *Client
	cancel   context.CancelFunc
	events   chan Event
	ended    chan struct{} // closed when the server ended the stream
	err      error         // why reading ended; set before ended closes
	autoPong atomic.Bool
	pongs    atomic.Int64
}

// OpenStream opens the session's GET stream. A non-200 answer is returned
// as a Stream with Status and Body set and nothing to read.
func (c *Client) OpenStream(ctx context.Context) (*Stream, error) {
	return c.open(ctx, http.MethodGet, nil)
}

// PostStream POSTs one JSON-RPC message built from v and returns its answer
// as a Stream, to read an SSE response event by event while it is still
// open. A JSON answer arrives as one event carrying the message.
func (c *Client) PostStream(ctx context.Context, v any) (*Stream, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	return c.open(ctx, http.MethodPost, body)
}

func (c *Client) open(ctx context.Context, method string, body []byte) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := c.NewRequest(ctx, method, body)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("GET %s: %w", c.URL, err)
	}
	s := &Stream{Status: resp.StatusCode, Header: resp.Header, c: c, cancel: cancel,
		events: make(chan Event, 1024), ended: make(chan struct{})}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		s.Body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && len(s.Body) > 0 {
			s.events <- Event{Name: "message", Data: string(bytes.TrimSpace(s.Body))}
		}
		s.err = fmt.Errorf("%s answered %d", method, resp.StatusCode)
		if resp.StatusCode == http.StatusOK {
			s.err = io.EOF
		}
		close(s.ended)
		return s, nil
	}
	go s.read(ctx, resp.Body)
	return s, nil
}

func (s *Stream) read(ctx context.Context, body io.ReadCloser) {
	defer close(s.ended)
	defer body.Close()
	rd := NewSSEReader(body)
	for {
		ev, err := rd.Next()
		if err != nil {
			s.err = err
			return
		}
		if s.autoPong.Load() && ev.HasMessage() {
			if m, err := ev.Message(); err == nil && m.IsRequest() && m.Method == "ping" {
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				resp, err := s.c.Reply(pctx, m.ID, map[string]any{})
				cancel()
				if err == nil && resp.Status == http.StatusAccepted {
					s.pongs.Add(1)
				}
			}
		}
		select {
		case s.events <- ev:
		case <-ctx.Done():
			s.err = ctx.Err()
			return
		}
	}
}

// AnswerPings makes the stream answer every ping request it reads (on), or
// leave them unanswered (off), from now on.
func (s *Stream) AnswerPings(on bool) { s.autoPong.Store(on) }

// Pongs reports how many pings the stream has answered and had accepted.
func (s *Stream) Pongs() int64 { return s.pongs.Load() }

// Next returns the next event or comment, waiting until ctx ends. It
// returns io.EOF once the server has ended the stream and all was read.
func (s *Stream) Next(ctx context.Context) (Event, error) {
	select {
	case ev := <-s.events:
		return ev, nil
	default:
	}
	select {
	case ev := <-s.events:
		return ev, nil
	case <-s.ended:
		select {
		case ev := <-s.events:
			return ev, nil
		default:
		}
		if errors.Is(s.err, io.EOF) || s.err == nil {
			return Event{}, io.EOF
		}
		return Event{}, fmt.Errorf("stream ended: %w", s.err)
	case <-ctx.Done():
		return Event{}, fmt.Errorf("waiting for a stream event: %w", ctx.Err())
	}
}

// NextMessage returns the next JSON-RPC message, skipping comments and
// priming events.
func (s *Stream) NextMessage(ctx context.Context) (Message, error) {
	ev, err := s.NextMessageEvent(ctx)
	if err != nil {
		return Message{}, err
	}
	return ev.Message()
}

// NextMessageEvent returns the next event that carries a JSON-RPC
// message (with its id), skipping comments and priming events.
func (s *Stream) NextMessageEvent(ctx context.Context) (Event, error) {
	for {
		ev, err := s.Next(ctx)
		if err != nil {
			return Event{}, err
		}
		if ev.HasMessage() {
			return ev, nil
		}
	}
}

// NextMatching returns the next JSON-RPC message for which keep is true,
// skipping comments and other messages (pings, for example).
func (s *Stream) NextMatching(ctx context.Context, keep func(Message) bool) (Message, error) {
	for {
		m, err := s.NextMessage(ctx)
		if err != nil || keep(m) {
			return m, err
		}
	}
}

// Ended is closed when the server has ended the stream (or it failed).
func (s *Stream) Ended() <-chan struct{} { return s.ended }

// Close closes the client side of the stream and joins its reader.
func (s *Stream) Close() {
	s.cancel()
	<-s.ended
}

package lifelineclient

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// errEventTooLong fails a stream whose event outgrows ResumePolicy.MaxEventBytes.
var errEventTooLong = errors.New("a server-sent event is longer than the transport holds")

// eventScanner cuts an SSE body into whole events, keeping the id of the
// last event dispatched and the last retry field, as the SSE spec does.
// It is owned by one reader.
type eventScanner struct {
	br      *bufio.Reader
	max     int
	pending []byte // the event arriving, raw
	id      string // its id field, if hasID
	hasID   bool
	// content says the event arriving has a field other than retry
	// (data, event, id); delivered says so of the last event next
	// returned. An event of comments and retry only (a stream's opening)
	// is no progress.
	content, delivered bool

	lastID   string
	retry    time.Duration
	hasRetry bool
}

// reset reads on from r, dropping any event half arrived: a resumed stream
// sends it again.
func (s *eventScanner) reset(r io.Reader) {
	if s.br == nil {
		s.br = bufio.NewReaderSize(r, 4096)
	} else {
		s.br.Reset(r)
	}
	s.pending = s.pending[:0]
	s.hasID = false
	s.content = false
}

// next returns the next whole event, raw and ending with its blank line,
// or the read error (io.EOF when the body ended; what had arrived of an
// unfinished event is then in partial).
func (s *eventScanner) next() (event []byte, err error) {
	for {
		start := len(s.pending)
		for {
			chunk, err := s.br.ReadSlice('\n')
			s.pending = append(s.pending, chunk...)
			if len(s.pending) > s.max {
				return nil, fmt.Errorf("%w (%d bytes)", errEventTooLong, s.max)
			}
			if err == nil {
				break
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
		}
		line := bytes.TrimRight(s.pending[start:], "\r\n")
		if len(line) == 0 {
			if s.hasID {
				s.lastID = s.id
			}
			s.hasID = false
			s.delivered, s.content = s.content, false
			event = s.pending
			s.pending = nil
			return event, nil
		}
		s.field(line)
	}
}

// field records an id or retry field line, and whether the event has
// content.
func (s *eventScanner) field(line []byte) {
	if line[0] != ':' && !bytes.HasPrefix(line, []byte("retry:")) {
		s.content = true
	}
	if v, ok := bytes.CutPrefix(line, []byte("id:")); ok {
		v = bytes.TrimPrefix(v, []byte(" "))
		if bytes.IndexByte(v, 0) < 0 {
			s.id, s.hasID = string(v), true
		}
		return
	}
	if v, ok := bytes.CutPrefix(line, []byte("retry:")); ok {
		v = bytes.TrimPrefix(v, []byte(" "))
		if len(v) > 0 && len(bytes.Trim(v, "0123456789")) == 0 {
			if ms, err := strconv.ParseUint(string(v), 10, 31); err == nil {
				s.retry, s.hasRetry = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
}

// partial returns what arrived of an unfinished event.
func (s *eventScanner) partial() []byte { return s.pending }

package testutil

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Event is one item read from an SSE stream: a message event or a comment.
type Event struct {
	// Comment is the text of a comment line (": text"), if this is a comment.
	Comment string
	// Name is the event name ("message" when absent).
	Name string
	// Data is the event's data, lines joined by "\n".
	Data string
	// ID is the event's id field ("" when it has none).
	ID string
	// Retry is the value of a retry field read with the event ("" when
	// none): the reconnection delay in milliseconds.
	Retry string
}

// IsComment reports whether the event is a comment line, or carries
// nothing but fields (retry) with no data.
func (e Event) IsComment() bool { return e.Name == "" && e.Data == "" }

// IsPriming reports whether the event is a priming event: an id and
// empty data, which gives the client a cursor to resume from and carries
// no message.
func (e Event) IsPriming() bool { return e.ID != "" && e.Data == "" }

// HasMessage reports whether the event carries a JSON-RPC message: it is
// neither a comment nor a priming event.
func (e Event) HasMessage() bool { return !e.IsComment() && e.Data != "" }

// Message decodes the event's data as a JSON-RPC message.
func (e Event) Message() (Message, error) {
	var m Message
	if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
		return m, fmt.Errorf("decode SSE data %q: %w", e.Data, err)
	}
	return m, nil
}

// Message is a decoded JSON-RPC message.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// IsRequest reports whether m is a request (a method and an id).
func (m Message) IsRequest() bool { return m.Method != "" && len(m.ID) > 0 }

// IsNotification reports whether m is a notification (a method, no id).
func (m Message) IsNotification() bool { return m.Method != "" && len(m.ID) == 0 }

// SSEReader parses an SSE byte stream into events, comments included.
type SSEReader struct {
	r      *bufio.Reader
	strict bool
}

// NewSSEReader reads events from r. An event the stream ends inside (no
// blank line after it) is still returned, as far as it got: tests see what
// a cut delivered.
func NewSSEReader(r io.Reader) *SSEReader { return &SSEReader{r: bufio.NewReaderSize(r, 64<<10)} }

// NewStrictSSEReader reads events from r as the SSE specification says a
// client must: an event or line the stream ends inside is discarded, and
// Next reports io.ErrUnexpectedEOF for it. A client that resumes by
// Last-Event-ID needs this: the id of an event it did not receive whole
// must not become its cursor.
func NewStrictSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 64<<10), strict: true}
}

// Next returns the next event or comment; io.EOF at the end of the stream.
func (s *SSEReader) Next() (Event, error) {
	var ev Event
	var data []string
	have := false
	for {
		line, err := s.r.ReadString('\n')
		switch {
		case err == io.EOF && s.strict && (line != "" || have):
			return Event{}, io.ErrUnexpectedEOF
		case err == io.EOF && line != "":
			// The stream ended inside a line: take it; the next read reports io.EOF.
		case err == io.EOF && have:
			// The stream ended inside an event: end it as a blank line would.
		case err != nil:
			return Event{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if have {
				ev.Data = strings.Join(data, "\n")
				if ev.Name == "" && len(data) > 0 {
					ev.Name = "message"
				}
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
			if !have {
				// A comment stands alone; report it at once.
				return Event{Comment: strings.TrimSpace(line[1:])}, nil
			}
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			have = true
			switch field {
			case "event":
				ev.Name = value
			case "data":
				data = append(data, value)
			case "id":
				ev.ID = value
			case "retry":
				ev.Retry = value
			}
		}
	}
}

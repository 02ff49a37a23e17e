package streamable_test

import (
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// A batch that carries a request and a response with the same id (the
// client's request ids and the server's are separate id spaces): an error
// answer to the stray response has id null, so the request's answer is the
// one answer with id 1.
func TestBatchResponseErrorDoesNotTakeARequestsID(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := session20250326(t, r)
	resp := postBatch(t, c,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	)
	got := jsonAnswers(t, resp)
	n := 0
	for _, a := range got {
		if string(a.ID) == "1" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d answers with id 1 in one batch, want 1: %s", n, resp.Body)
	}
}

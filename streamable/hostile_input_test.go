package streamable_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Every class of malformed or hostile request a client can send on a live
// session gets its documented status and a JSON-RPC error saying what was
// wrong (echoing the request's id where it had one), and leaves the session,
// the messages queued for its stream and every other session untouched:
// wrong member types, huge ids, huge headers, thousands of requests,
// responses to ids never issued, answers to another session's request,
// and ids of sessions that do not exist.
func TestHostileInputLeavesTheSessionAndItsQueuedMessagesAlone(t *testing.T) {
	r := newRig(t, streamable.Config{})
	victim, other := r.session(), r.session()
	ctx := testutil.Context(t, 2*wait)
	const queued = 5
	if got := toolText(t, victim, "lifeline_notify_session", map[string]any{"count": queued, "tag": "queued"}); got != fmt.Sprintf("sent %d notifications", queued) {
		t.Fatalf("lifeline_notify_session: %q", got)
	}
	sessions := r.h.Stats().Sessions

	hugeID := `"` + strings.Repeat("i", 64<<10) + `"`
	cases := []badCase{
		{name: "id is an object", check: echoes("null"), body: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, status: 400, mention: "id", code: -32600},
		{name: "id is an array", check: echoes("null"), body: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, status: 400, mention: "id", code: -32600},
		{name: "id is a boolean", check: echoes("null"), body: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, status: 400, mention: "id", code: -32600},
		{name: "method is a number", body: `{"jsonrpc":"2.0","id":"m","method":7}`, status: 400, mention: "method", code: -32600,
			check: echoes(`"m"`)},
		{name: "jsonrpc is a number", body: `{"jsonrpc":2.0,"id":"v","method":"ping"}`, status: 400, mention: "jsonrpc", code: -32600},
		{name: "result and error both", body: `{"jsonrpc":"2.0","id":5,"result":{},"error":{"code":1,"message":"x"}}`, status: 400, code: -32600},
		{name: "response to an id never issued", body: `{"jsonrpc":"2.0","id":987654321,"result":{}}`, status: 400, code: -32600},
		{name: "response to an id never issued, huge", body: `{"jsonrpc":"2.0","id":` + hugeID + `,"result":{}}`, status: 400, code: -32600},
		{name: "error response to an id never issued", body: `{"jsonrpc":"2.0","id":"nope","error":{"code":-1,"message":"no"}}`, status: 400, code: -32600},
		{name: "unknown session id", header: map[string]string{"Mcp-Session-Id": "no-such-session"}, body: echoCall, status: 404,
			mention: "Session", check: echoes("null")}, // a session-level 404 names no call (status.go, forRequest)
		{name: "huge unknown session id", header: map[string]string{"Mcp-Session-Id": strings.Repeat("s", 16<<10)}, body: echoCall, status: 404,
			mention: "Session"},
		{name: "GET for an unknown session", method: http.MethodGet, header: map[string]string{"Mcp-Session-Id": "no-such-session"}, status: 404,
			mention: "Session"},
		{name: "DELETE for an unknown session", method: http.MethodDelete, header: map[string]string{"Mcp-Session-Id": "no-such-session"}, status: 404,
			mention: "Session"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { sendBad(t, victim, tc) })
	}

	t.Run("huge id on a request is answered with it", func(t *testing.T) {
		resp, err := victim.PostRaw(ctx, []byte(`{"jsonrpc":"2.0","id":`+hugeID+`,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "ping with a 64 KiB id", resp.Status, http.StatusOK, resp.Body[:min(len(resp.Body), 200)])
		m, err := resp.Last()
		if err != nil || m.Error != nil || string(m.ID) != hugeID {
			t.Fatalf("ping with a 64 KiB id: %v %+v, id of %d bytes", err, m.Error, len(m.ID))
		}
	})

	t.Run("huge header", func(t *testing.T) {
		// net/http refuses it before the transport sees it (MaxHeaderBytes).
		req, err := victim.NewRequest(ctx, http.MethodPost, []byte(echoCall))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Padding", strings.Repeat("h", 2<<20))
		resp, err := victim.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "a 2 MiB header", resp.Status, http.StatusRequestHeaderFieldsTooLarge, resp.Body)
	})

	t.Run("thousands of requests", func(t *testing.T) {
		const n, workers = 2000, 8
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += workers {
					resp, err := victim.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": i, "method": "ping"})
					if err == nil && resp.Status != http.StatusOK {
						err = fmt.Errorf("ping %d: status %d: %s", i, resp.Status, resp.Body)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})

	t.Run("answers to another session's request", func(t *testing.T) {
		// A response on victim's session that names an id other's session
		// could have issued: victim issued none, so it is refused, and
		// other's session is not touched.
		resp, err := victim.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "a response to an id victim never issued", resp.Status, http.StatusBadRequest, resp.Body)
	})

	wantUntouched(t, r, victim, sessions)
	wantUntouched(t, r, other, sessions)
	// What was queued for victim's stream before all of it arrives, in order.
	s := r.stream(victim)
	for i := range queued {
		m, err := s.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
		if err != nil {
			t.Fatalf("queued notification %d of %d never arrived: %v", i+1, queued, err)
		}
		var p struct {
			Data struct {
				Seq int    `json:"seq"`
				Tag string `json:"tag"`
			} `json:"data"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.Data.Seq != i || p.Data.Tag != "queued" {
			t.Fatalf("queued notification %d: %s", i, m.Params)
		}
	}
}

// echoes checks that a refusal carries the request's id.
func echoes(id string) func(t *testing.T, resp *testutil.Response) {
	return func(t *testing.T, resp *testutil.Response) {
		t.Helper()
		var m testutil.Message
		if err := json.Unmarshal(resp.Body, &m); err != nil || string(m.ID) != id {
			t.Fatalf("the refusal's id is %s, want %s (body %s)", m.ID, id, resp.Body)
		}
	}
}

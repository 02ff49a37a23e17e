package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// The floor gives a 2026-07-28 tool call no session to send through; with
// FloorSession the tool finds one (the notify tool answers "sent", not its
// "no session" error). A session-era request gets none either way.
func TestFloorSessionGivesTheToolASession(t *testing.T) {
	for _, withSession := range []bool{false, true} {
		p, err := StartPeer(Floor, Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second, FloorSession: withSession})
		if err != nil {
			t.Fatal(err)
		}
		for _, modern := range []bool{false, true} {
			got := floorNotifyAnswer(t, p.JSONURL, modern)
			want := "no session"
			if withSession && modern {
				want = "sent"
			}
			if got != want {
				t.Errorf("FloorSession %v, 2026-07-28 %v: the notify tool answered %q, want %q", withSession, modern, got, want)
			}
		}
		p.Close()
	}
}

// floorNotifyAnswer calls the notify tool on url, in 2026-07-28 when modern
// (else as a session-era request without a session), and returns the text
// of its result.
func floorNotifyAnswer(t *testing.T, url string, modern bool) string {
	t.Helper()
	params := map[string]any{"name": ToolNotify, "arguments": map[string]any{}}
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if modern {
		if raw, err = modernParams(params); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": json.RawMessage(raw)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if modern {
		setModernHeaders(req.Header, "tools/call", params)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || len(answer.Result.Content) != 1 {
		t.Fatalf("status %d: the answer does not decode to one content item: %v", resp.StatusCode, err)
	}
	return answer.Result.Content[0].Text
}

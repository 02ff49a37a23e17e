package streamable

import (
	"encoding/json"
	"strconv"
	"testing"
)

// TestPingIDsKeepEachStreamsLastFew checks the ping table without a map:
// each stream owns its last pingsKeptPerStream ping ids, an older one is
// forgotten (its pong accepted, and ignored), an ended stream's ids are
// dropped, and neither 0 (a free slot's mark) nor an id never issued finds
// a stream.
func TestPingIDsKeepEachStreamsLastFew(t *testing.T) {
	var calls callTable
	a, b := &getStream{}, &getStream{}
	if got := calls.pingOwner(0); got != nil {
		t.Fatal("id 0 found a stream before any ping")
	}
	var aIDs []int64
	for range pingsKeptPerStream + 2 {
		aIDs = append(aIDs, calls.newPing(a))
	}
	first := calls.newPing(b)
	// a's two oldest are forgotten; its last pingsKeptPerStream are its own.
	for i, id := range aIDs {
		want := a
		if i < 2 {
			want = nil
		}
		if got := calls.pingOwner(id); got != want {
			t.Errorf("ping %d (a's #%d): owner %p, want %p", id, i, got, want)
		}
	}
	if got := calls.pingOwner(first); got != b {
		t.Errorf("b's ping %d: owner %p, want b %p", first, got, b)
	}
	if calls.pingOwner(0) != nil {
		t.Error("id 0 (a free slot of b's) found a stream")
	}
	if calls.pingOwner(first+1) != nil {
		t.Error("an id never issued found a stream")
	}
	if len(calls.pingers) != 2 {
		t.Errorf("%d streams with pings, want 2", len(calls.pingers))
	}
	// A forgotten id is still one this session issued: accepted, ignored.
	if !calls.deliver(json.RawMessage(strconv.FormatInt(aIDs[0], 10)), json.RawMessage(`{}`), nil) {
		t.Error("a pong to a forgotten ping was refused")
	}
	if calls.deliverIssued(json.RawMessage(strconv.FormatInt(aIDs[0], 10)), json.RawMessage(`{}`), nil) {
		t.Error("deliverIssued took a forgotten ping for one still waited for")
	}
	calls.forgetPings(a)
	for _, id := range aIDs {
		if calls.pingOwner(id) != nil {
			t.Errorf("ping %d of an ended stream still found", id)
		}
	}
	if got := calls.pingOwner(first); got != b || len(calls.pingers) != 1 {
		t.Errorf("after a ended: b's ping owner %p, %d streams with pings; want b, 1", got, len(calls.pingers))
	}
	// A stream that pings again after its ids were dropped is found again.
	again := calls.newPing(a)
	if calls.pingOwner(again) != a {
		t.Error("a's new ping not found after its old ones were dropped")
	}
}

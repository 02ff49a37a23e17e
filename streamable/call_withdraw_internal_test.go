package streamable

import (
	"fmt"
	"slices"
	"testing"
)

// A full request queue whose requests were all withdrawn takes a new one:
// enqueue drops the withdrawn, keeps the rest in order, and only a queue
// full of live requests refuses.
func TestEnqueueCompactsWithdrawnRequests(t *testing.T) {
	tbl := newCallTable(0)
	q := make(chan []byte, 3)
	msg := func(i int) []byte { return fmt.Appendf(nil, `{"id":%d}`, i) }
	var sent [][]byte
	for i := range 3 {
		m := msg(i)
		sent = append(sent, m)
		if !tbl.enqueue(q, m, int64(i)) {
			t.Fatalf("enqueue %d refused on a queue with room", i)
		}
	}
	// The callers of 0 and 2 give up while their requests are queued.
	for _, i := range []int{0, 2} {
		if tbl.settle(sent[i]) {
			t.Fatalf("request %d counted as written while queued", i)
		}
	}
	for i := 3; i < 5; i++ {
		m := msg(i)
		sent = append(sent, m)
		if !tbl.enqueue(q, m, int64(i)) {
			t.Fatalf("enqueue %d refused: withdrawn requests filled the queue", i)
		}
	}
	if tbl.enqueue(q, msg(5), 5) {
		t.Fatal("a queue full of live requests took one more")
	}
	var got []string
	for len(q) > 0 {
		m := <-q
		if !tbl.take(m) {
			t.Fatalf("%s: a live request was skipped", m)
		}
		got = append(got, string(m))
	}
	want := []string{string(sent[1]), string(sent[3]), string(sent[4])}
	if !slices.Equal(got, want) {
		t.Fatalf("queue held %q, want %q", got, want)
	}
	// Written, then its caller gives up: the caller sends a
	// cancellation; the table forgets it.
	tbl.wrote(sent[1])
	if !tbl.settle(sent[1]) {
		t.Fatal("a taken request counted as not written")
	}
	if len(tbl.out) != 2 || tbl.withdrawn != 0 {
		t.Fatalf("table holds %d requests (%d withdrawn), want the 2 live ones", len(tbl.out), tbl.withdrawn)
	}
}

// A pump's held requests lose the withdrawn ones, in order; one put back
// after a failed write is withdrawn again if its caller gives up; one whose
// caller gives up while it is being written is dropped if that write fails,
// and forgotten if it succeeds.
func TestPruneAndPutBack(t *testing.T) {
	tbl := newCallTable(0)
	q := make(chan []byte, 4)
	held := make([][]byte, 4)
	for i := range held {
		held[i] = fmt.Appendf(nil, `{"id":%d}`, i)
		tbl.enqueue(q, held[i], int64(i))
		<-q
	}
	tbl.settle(held[1])
	pending := make([]carried, len(held))
	for i, m := range held {
		pending[i] = carried{msg: m}
	}
	kept := tbl.prune(pending)
	if len(kept) != 3 || string(kept[0].msg) != string(held[0]) || string(kept[1].msg) != string(held[2]) {
		t.Fatalf("pruned to %v", kept)
	}
	tbl.take(held[0])
	if !tbl.keepAfterFailure(held[0]) { // its write failed: queued again
		t.Fatal("a request whose write failed, its caller waiting, was not kept")
	}
	if tbl.settle(held[0]) {
		t.Fatal("a request put back after a failed write counted as written")
	}
	if tbl.take(held[0]) {
		t.Fatal("a withdrawn request put back was not skipped")
	}
	tbl.take(held[2])
	if !tbl.settle(held[2]) { // the caller gives up during the write
		t.Fatal("a request being written did not count as written")
	}
	if tbl.keepAfterFailure(held[2]) {
		t.Fatal("a request abandoned during a write that failed was kept")
	}
	tbl.take(held[3])
	tbl.settle(held[3])
	tbl.wrote(held[3])
	if n := len(tbl.out); n != 0 || tbl.tracked.Load() != 0 {
		t.Fatalf("%d entries (%d counted) left once every request was settled", n, tbl.tracked.Load())
	}
}

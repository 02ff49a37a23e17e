package streamable

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// deadlineRecorder is a response writer whose read deadline is seen: the
// watch interrupts a body by setting it in the past.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	set chan time.Time
}

func (d deadlineRecorder) SetReadDeadline(t time.Time) error {
	d.set <- t
	return nil
}

func newDeadlineRecorder() deadlineRecorder {
	return deadlineRecorder{httptest.NewRecorder(), make(chan time.Time, 4)}
}

// expireAt runs the watch's expiry of bodies as a look at now would.
func (w *requestWatch) expireAt(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expireReadsLocked(now)
}

// Each body is interrupted once its own due time has come, and not
// before: the one due first, then one due later, then one listed after
// every other was interrupted (the earliest due time the watch keeps moves
// on with each). A body read in time is untouched.
func TestWatchExpiresEachBodyWhenDue(t *testing.T) {
	w := newRequestWatch(0)
	defer w.close()
	const timeout = time.Hour // the goroutine's own looks never find one due
	start := time.Now()
	post := func() *http.Request { return httptest.NewRequest(http.MethodPost, "/mcp", nil) }
	first, second, third, onTime := post(), post(), post(), post()
	firstW, secondW, thirdW, onTimeW := newDeadlineRecorder(), newDeadlineRecorder(), newDeadlineRecorder(), newDeadlineRecorder()
	for _, b := range []struct {
		r *http.Request
		w deadlineRecorder
	}{{first, firstW}, {second, secondW}, {onTime, onTimeW}} {
		if !w.beginRead(b.w, b.r, timeout) {
			t.Fatal("a read refused before Shutdown")
		}
	}
	interrupted := func(d deadlineRecorder) bool {
		select {
		case at := <-d.set:
			if !at.Before(start) {
				t.Fatalf("read deadline set to %v, not in the past", at)
			}
			return true
		default:
			return false
		}
	}
	// The second is due a minute after the first.
	w.mu.Lock()
	read := w.reads[second]
	read.due = read.due.Add(time.Minute)
	w.reads[second] = read
	firstDue, secondDue := w.reads[first].due, read.due
	w.mu.Unlock()
	if got := w.endRead(onTime); got != readDone {
		t.Fatalf("a body read in time ended %v, want readDone", got)
	}

	w.expireAt(firstDue.Add(-time.Millisecond))
	if interrupted(firstW) || interrupted(secondW) {
		t.Fatal("a body interrupted before it was due")
	}
	w.expireAt(firstDue)
	if !interrupted(firstW) || interrupted(secondW) {
		t.Fatal("at the first body's due time: want it interrupted, and only it")
	}
	w.expireAt(secondDue.Add(-time.Millisecond))
	if interrupted(secondW) {
		t.Fatal("the second body interrupted before it was due")
	}
	w.expireAt(secondDue)
	if !interrupted(secondW) {
		t.Fatal("the second body not interrupted at its due time")
	}
	if !w.beginRead(thirdW, third, timeout) {
		t.Fatal("a read refused before Shutdown")
	}
	w.mu.Lock()
	thirdDue := w.reads[third].due
	w.mu.Unlock()
	w.expireAt(thirdDue)
	if !interrupted(thirdW) {
		t.Fatal("a body listed after every other was interrupted is not interrupted when due")
	}
	if interrupted(firstW) || interrupted(secondW) {
		t.Fatal("a body interrupted twice")
	}
	for _, r := range []*http.Request{first, second, third} {
		if got := w.endRead(r); got != readExpired {
			t.Fatalf("an interrupted body ended %v, want readExpired", got)
		}
	}
}

// A body being read keeps the watch's goroutine running, so that its due
// time is seen; once none is listed the goroutine exits. Shutdown
// (closeReads) interrupts the bodies still arriving and refuses new ones.
func TestWatchRunsWhileBodiesArrive(t *testing.T) {
	w := newRequestWatch(0)
	defer w.close()
	r, rw := httptest.NewRequest(http.MethodPost, "/mcp", nil), newDeadlineRecorder()
	w.beginRead(rw, r, 10*time.Millisecond)
	if _, running := w.listed(); !running {
		t.Fatal("no goroutine for a body with a due time")
	}
	select {
	case <-rw.set:
	case <-time.After(10 * time.Second):
		t.Fatal("a body due in 10 ms not interrupted within 10 s")
	}
	if got := w.endRead(r); got != readExpired {
		t.Fatalf("ended %v, want readExpired", got)
	}
	testutil.Eventually(t, 10*time.Second, "the goroutine exits", func() bool { _, running := w.listed(); return !running })

	untimed := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	w.beginRead(rw, untimed, 0)
	if _, running := w.listed(); running {
		t.Fatal("a goroutine started for a body without a bound")
	}
	w.closeReads()
	select {
	case <-rw.set:
	default:
		t.Fatal("Shutdown did not interrupt a body being read")
	}
	if got := w.endRead(untimed); got != readInterrupted {
		t.Fatalf("ended %v, want readInterrupted", got)
	}
	if w.beginRead(rw, r, time.Second) {
		t.Fatal("a read begun after Shutdown")
	}
}

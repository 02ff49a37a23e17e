package lifelineclient

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sseServer serves a POST's SSE response: the POST gets first and then
// breaks off (the connection is dropped mid-stream); each resume (a GET
// with Last-Event-ID) is answered by resume.
func sseServer(t *testing.T, first string, resume func(w http.ResponseWriter, r *http.Request)) (url string, resumes *atomic.Int64) {
	resumes = &atomic.Int64{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Last-Event-ID") != "" {
			resumes.Add(1)
			resume(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, resumes
}

// read POSTs to url through a roundTripper with policy p and reads the
// SSE response. (A GET stream is resumed when it ends, too, so it is read
// until the reader leaves; a POST's ends with its body.)
func read(t *testing.T, url string, p ResumePolicy) (string, error) {
	t.Helper()
	ht := &http.Transport{}
	t.Cleanup(ht.CloseIdleConnections)
	rt := &roundTripper{base: ht, policy: p.effective(), logger: slog.New(slog.DiscardHandler)}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestResumedStreamGetsWholeEventsOnce(t *testing.T) {
	url, resumes := sseServer(t, "retry: 1\nid: 1\ndata: a\n\nid: 2\ndata: b", func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Last-Event-ID"); got != "1" {
			t.Errorf("Last-Event-ID %q, want 1", got)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: 2\ndata: b\n\nid: 3\ndata: c\n\n")
	})
	got, err := read(t, url, ResumePolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "retry: 1\nid: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: c\n\n"; got != want {
		t.Fatalf("read %q, want %q", got, want)
	}
	if resumes.Load() != 1 {
		t.Fatalf("resumes: %d, want 1", resumes.Load())
	}
}

func TestResumeGivesUpAfterAttempts(t *testing.T) {
	for name, resume := range map[string]func(w http.ResponseWriter, r *http.Request){
		"503": func(w http.ResponseWriter, r *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) },
		"broken at once": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
	} {
		t.Run(name, func(t *testing.T) {
			url, resumes := sseServer(t, "retry: 1\nid: 1\ndata: a\n\n", resume)
			got, err := read(t, url, ResumePolicy{Attempts: 3})
			if err == nil || !strings.Contains(err.Error(), "3 attempts") {
				t.Fatalf("error %v, want the attempts to run out", err)
			}
			if got != "retry: 1\nid: 1\ndata: a\n\n" {
				t.Fatalf("read %q", got)
			}
			if resumes.Load() != 3 {
				t.Fatalf("resumes: %d, want 3", resumes.Load())
			}
		})
	}
}

func TestResumeRefusedIsNotRetried(t *testing.T) {
	url, resumes := sseServer(t, "retry: 1\nid: 1\ndata: a\n\n", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gone", http.StatusNotFound)
	})
	_, err := read(t, url, ResumePolicy{})
	if !errors.Is(err, errStreamGone) {
		t.Fatalf("error %v, want errStreamGone", err)
	}
	if resumes.Load() != 1 {
		t.Fatalf("resumes: %d, want 1", resumes.Load())
	}
}

// An event is held whole up to MaxEventBytes; one byte more fails the
// stream.
func TestEventBound(t *testing.T) {
	const bound = 1000
	for _, size := range []int{bound, bound + 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := "data: " + strings.Repeat("x", size-len("data: \n\n")) + "\n\n"
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, data)
			}))
			t.Cleanup(ts.Close)
			got, err := read(t, ts.URL, ResumePolicy{MaxEventBytes: bound})
			if size <= bound {
				if err != nil || got != data {
					t.Fatalf("event of %d bytes: %d bytes read, %v", size, len(got), err)
				}
				return
			}
			if !errors.Is(err, errEventTooLong) {
				t.Fatalf("event of %d bytes: %v, want errEventTooLong", size, err)
			}
		})
	}
}

func TestResumeDelay(t *testing.T) {
	p := ResumePolicy{MinDelay: 10 * time.Millisecond, MaxDelay: time.Second}.effective()
	for _, c := range []struct {
		n        int
		retry    time.Duration
		hasRetry bool
		want     time.Duration
	}{
		{1, 0, false, time.Second},
		{1, 100 * time.Millisecond, true, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, true, 200 * time.Millisecond},
		{4, 100 * time.Millisecond, true, 800 * time.Millisecond},
		{5, 100 * time.Millisecond, true, time.Second},
		{1, 0, true, 10 * time.Millisecond},
		{1, time.Hour, true, time.Second},
	} {
		if got := p.delay(c.n, c.retry, c.hasRetry); got != c.want {
			t.Errorf("delay(%d, %v, %v) = %v, want %v", c.n, c.retry, c.hasRetry, got, c.want)
		}
	}
}

// A GET stream the server ends after an event id is resumed from it (the
// server asks the client to poll); the reader's Close ends it.
func TestEndedGETStreamIsResumed(t *testing.T) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		i := n.Add(1)
		if want := fmt.Sprint(i - 1); i > 1 && r.Header.Get("Last-Event-ID") != want {
			t.Errorf("Last-Event-ID %q, want %s", r.Header.Get("Last-Event-ID"), want)
		}
		fmt.Fprintf(w, "retry: 1\nid: %d\ndata: %d\n\n", i, i)
	}))
	t.Cleanup(ts.Close)
	ht := &http.Transport{}
	t.Cleanup(ht.CloseIdleConnections)
	rt := &roundTripper{base: ht, policy: ResumePolicy{}.effective(), logger: slog.New(slog.DiscardHandler)}
	req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	buf := make([]byte, 64)
	for !strings.Contains(got.String(), "data: 3\n\n") {
		k, err := resp.Body.Read(buf)
		got.Write(buf[:k])
		if err != nil {
			t.Fatalf("read: %v (after %q)", err, got.String())
		}
	}
	resp.Body.Close()
	if want := "retry: 1\nid: 1\ndata: 1\n\nretry: 1\nid: 2\ndata: 2\n\nretry: 1\nid: 3\ndata: 3\n\n"; got.String() != want {
		t.Fatalf("read %q, want %q", got.String(), want)
	}
}

// A server asking for no wait (retry: 0) still gets the failed attempts'
// backoff: the wait starts from MinDelay and doubles, rather than staying
// at MinDelay for every attempt.
func TestResumeDelayBacksOffFromZeroRetry(t *testing.T) {
	p := ResumePolicy{MinDelay: 10 * time.Millisecond, MaxDelay: time.Second}.effective()
	for n, want := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond, 4: 80 * time.Millisecond, 10: time.Second} {
		if got := p.delay(n, 0, true); got != want {
			t.Errorf("delay(%d, 0, true) = %v, want %v", n, got, want)
		}
	}
}

// A server that takes each resume, sends only its opening (a retry field
// and a comment, as lifeline does) and breaks the stream again has not
// delivered anything: the attempts still run out, and the waits grow,
// instead of the stream being resumed forever at the first attempt's wait.
func TestResumeOpeningOnlyCountsAsAFailedAttempt(t *testing.T) {
	const giveUpAfter = 20 // the server's own bound, so the test ends either way
	var n atomic.Int64
	url, resumes := sseServer(t, "retry: 1\nid: 1\ndata: a\n\n", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > giveUpAfter {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "retry: 1\n: stream open\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	_, err := read(t, url, ResumePolicy{Attempts: 3, MaxDelay: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("error %v, want the attempts to run out", err)
	}
	if got := resumes.Load(); got != 3 {
		t.Fatalf("resumes: %d, want 3 (each delivered only the stream's opening)", got)
	}
}

package streamable_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Every progress notification a 2026-07-28 tool call sends arrives on its
// own response, ahead of the result, at any concurrency. (mcp-go's own
// handler loses one of 3 on about half of such calls: it drops a
// notification taken off the channel as the request finishes.)
func TestModernProgressNotificationsNoneLost(t *testing.T) {
	r := newRig(t, streamable.Config{})
	ctx := testutil.Context(t, 4*wait)
	const calls, workers = 2000, 64
	var mu sync.Mutex
	short := 0
	var failures []string
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				body := modernMsg(i, "tools/call", map[string]any{"name": "lifeline_progress",
					"arguments": map[string]any{"steps": 3}},
					map[string]any{"progressToken": fmt.Sprintf("p%d", i)})
				req := r.modernRequest(ctx, t, body, nil)
				resp, err := r.client().Do(req)
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					continue
				}
				progress := 0
				for _, m := range resp.Messages {
					if m.Method == "notifications/progress" {
						progress++
					}
				}
				last, err := resp.Last()
				mu.Lock()
				if resp.Status != http.StatusOK || err != nil || string(last.ID) != fmt.Sprint(i) {
					failures = append(failures, fmt.Sprintf("call %d: %d %v %s", i, resp.Status, err, resp.Body))
				}
				if progress != 3 {
					short++
				}
				mu.Unlock()
			}
		}()
	}
	for i := range calls {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d calls failed, first: %s", len(failures), failures[0])
	}
	if short > 0 {
		t.Fatalf("%d of %d calls got fewer than 3 progress notifications", short, calls)
	}
}

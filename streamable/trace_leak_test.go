package streamable_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Every span the transport starts is ended, whichever way its request
// ends: answered, in a batch, on a listen stream, cut and let go of,
// refused by a terminating session, interrupted by DELETE and by
// Shutdown.
func TestTraceEverySpanStartedIsEnded(t *testing.T) {
	const steps = 3
	step := make(chan struct{})
	r := newTraceRig(t, streamable.Config{IdleTTL: 2 * time.Second}, steppedTool(steps, step))
	ctx := testutil.Context(t, wait)

	c := r.session()
	if resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"}); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("echo: %v %+v", err, resp)
	}
	old := session20250326(t, r.rig)
	postBatch(t, old,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lifeline_progress","arguments":{"steps":2},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	l := r.openListen(ctx, t, 9, map[string]any{"toolsListChanged": true})
	l.resp.Body.Close()

	// A stepped call whose client leaves after the first step (let go
	// of), one DELETE interrupts, and one Shutdown interrupts.
	proxy := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{r.ts.URL}})
	pc := testutil.NewClient(proxy.URL())
	initializeAt(t, pc, "2025-11-25")
	cut := callStepped(t, ctx, pc, 1)
	step <- struct{}{}
	if _, err := cut.NextMessageEvent(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.CutAll()
	d := r.session()
	callStepped(t, ctx, d, 2)
	if resp, err := d.Delete(ctx); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %+v", err, resp)
	}
	e := r.session()
	callStepped(t, ctx, e, 3)

	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // a grace of part of it
	defer cancel()
	if err := r.h.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	testutil.Eventually(t, wait, "every span started to end", func() bool {
		return len(r.rec.Started()) == len(r.rec.Ended())
	})
	for _, s := range r.rec.Started() {
		if s.EndTime().IsZero() {
			t.Errorf("span %q never ended", s.Name())
		}
	}
}

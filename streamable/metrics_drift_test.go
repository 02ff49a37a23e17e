package streamable_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// shutdownAndCollect shuts the rig's handler down (the rig's cleanup
// shuts it down again, which does nothing) and collects.
func shutdownAndCollect(t *testing.T, r *rig, mr *meterRig) metrics {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.h.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	return mr.collect()
}

// wantNothingOpen checks that the two UpDownCounters are back at zero.
func wantNothingOpen(t *testing.T, ms metrics) {
	t.Helper()
	for _, kind := range []string{"get", "post_sse", "listen", "resume"} {
		ms.check(t, 0, "lifeline.streams.open", attrKind(kind))
	}
	ms.check(t, 0, "lifeline.sessions.open")
}

// Each kind of stream and each end of a session brings
// lifeline.streams.open and lifeline.sessions.open back to 0: they do not
// drift, whichever way a stream or session ends.
func TestMetricsOpenCountersReturnToZero(t *testing.T) {
	t.Run("get_then_delete", func(t *testing.T) {
		mr := newMeterRig(t)
		r := newRig(t, streamable.Config{MeterProvider: mr.mp})
		c := r.session()
		s := r.stream(c)
		mr.collect().check(t, 1, "lifeline.streams.open", attrKind("get"))
		if resp, err := c.Delete(testutil.Context(t, wait)); err != nil || resp.Status != http.StatusOK {
			t.Fatalf("DELETE: %v %+v", err, resp)
		}
		<-s.Ended()
		r.quiesce()
		wantNothingOpen(t, mr.collect())
	})
	t.Run("batch_sse", func(t *testing.T) {
		mr := newMeterRig(t)
		r := newRig(t, streamable.Config{MeterProvider: mr.mp})
		c := session20250326(t, r)
		resp := postBatch(t, c,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lifeline_progress","arguments":{"steps":2},"_meta":{"progressToken":"p"}}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
		wantStatus(t, "batch", resp.Status, http.StatusOK, resp.Body)
		r.quiesce()
		wantNothingOpen(t, shutdownAndCollect(t, r, mr))
	})
	t.Run("listen", func(t *testing.T) {
		mr := newMeterRig(t)
		r := newRig(t, streamable.Config{MeterProvider: mr.mp})
		ctx := testutil.Context(t, wait)
		l := r.openListen(ctx, t, 1, map[string]any{"toolsListChanged": true})
		mr.collect().check(t, 1, "lifeline.streams.open", attrKind("listen"))
		l.resp.Body.Close()
		testutil.Eventually(t, wait, "the listen stream to end", func() bool { return r.h.Stats().ListenStreams == 0 })
		wantNothingOpen(t, mr.collect())
	})
	t.Run("shutdown_with_streams_open", func(t *testing.T) {
		mr := newMeterRig(t)
		r := newRig(t, streamable.Config{MeterProvider: mr.mp})
		c := r.session()
		r.stream(c)
		r.session()
		ms := mr.collect()
		ms.check(t, 2, "lifeline.sessions.open")
		wantNothingOpen(t, shutdownAndCollect(t, r, mr))
	})
	t.Run("expiry", func(t *testing.T) {
		mr := newMeterRig(t)
		r := newRig(t, streamable.Config{MeterProvider: mr.mp, IdleTTL: testIdleTTL})
		r.session()
		testutil.Eventually(t, wait, "the idle session to expire", func() bool { return r.h.Stats().Sessions == 0 })
		ms := mr.collect()
		wantNothingOpen(t, ms)
		ms.check(t, 1, "lifeline.sessions.ended", attrEnd("expired"))
	})
	t.Run("cut_post_resumed", func(t *testing.T) {
		const steps = 4
		step := make(chan struct{})
		mr := newMeterRig(t)
		r := newRig(t, streamable.Config{MeterProvider: mr.mp}, steppedTool(steps, step))
		proxy := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{r.ts.URL}})
		c := testutil.NewClient(proxy.URL())
		initializeAt(t, c, "2025-11-25")
		ctx := testutil.Context(t, wait)
		call := callStepped(t, ctx, c, 7)
		pr := &postReader{t: t, ids: map[string]bool{}}
		step <- struct{}{}
		pr.until(ctx, call, 1)
		mr.collect().check(t, 1, "lifeline.streams.open", attrKind("post_sse"))
		if proxy.CutAll() == 0 {
			t.Fatal("the proxy had no connection to cut")
		}
		step <- struct{}{}
		resumed := openResume(t, c, pr.lastID)
		wantStatus(t, "GET resuming the POST stream", resumed.Status, http.StatusOK, resumed.Body)
		for range steps - 1 {
			step <- struct{}{}
		}
		pr.until(ctx, resumed, -1)
		<-resumed.Ended()
		r.quiesce()
		testutil.Eventually(t, wait, "streams.open to settle", func() bool {
			return mr.collect().value("lifeline.streams.open") == 0
		})
		wantNothingOpen(t, shutdownAndCollect(t, r, mr))
	})
}

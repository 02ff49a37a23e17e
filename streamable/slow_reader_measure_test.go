package streamable_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// heapAfterGC is the live heap, in MB, after a collection.
func heapAfterGC() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / 1e6
}

// TestSlowReaderLargeMessageHoldsNoCopy measures the slow reader of
// TestSlowSteadyReaderGetsALargeMessageAndWhatIsBehindIt (a 4 MiB
// notification and a small one behind it, a client reading 1 MiB/s, a 1 s
// write timeout) and requires that the first stream delivers both and that
// nothing of the large message is held once it is written (before chunked
// writes: never delivered, and 8.7 MB held). It logs the bytes the client
// read on each stream, the live heap mid-write and at the end (the stream
// still open) and the goroutines (-v); BENCHMARKS.md quotes them.
func TestSlowReaderLargeMessageHoldsNoCopy(t *testing.T) {
	r := newRigOn(t, streamable.Config{WriteTimeout: time.Second}, smallSendBuffer(serverSendBuffer), bigNoteTool)
	c := r.session()
	th := testutil.NewThrottle(1 << 20)
	slow := &testutil.Client{URL: c.URL, HTTP: th.Client(), SessionID: c.SessionID, ProtocolVersion: c.ProtocolVersion}
	ctx := testutil.Context(t, 60*time.Second)
	heapBase, goBase := heapAfterGC(), runtime.NumGoroutine()
	s := r.stream(slow)
	sendBig(t, c)
	mid := make(chan float64, 1)
	go func() { // one sample, once the client has read 512 KiB of the first stream (a bounded poll)
		for i := 0; i < 1000 && th.BytesRead() < 512<<10; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		mid <- heapAfterGC()
	}()
	var perStream []int64
	read, delivered := th.BytesRead(), false
	for !delivered && len(perStream) < 4 && ctx.Err() == nil {
		m, err := s.NextMatching(ctx, notPing)
		if err != nil {
			perStream = append(perStream, th.BytesRead()-read)
			read = th.BytesRead()
			s.Close()
			s = r.stream(slow)
			continue
		}
		seq, _ := payloadOf(t, m)
		delivered = seq == 1
	}
	if delivered {
		perStream = append(perStream, th.BytesRead()-read)
	}
	heapMid := <-mid
	heapEnd, goEnd := heapAfterGC(), runtime.NumGoroutine()
	st := r.h.Stats()
	t.Logf("delivered behind the large message: %v; streams: %d; bytes read per stream: %v (total %.1f MB)",
		delivered, len(perStream), perStream, float64(th.BytesRead())/1e6)
	t.Logf("live heap: %.1f MB before, %.1f MB with 512 KiB read (+%.1f), %.1f MB at the end (+%.1f); goroutines: %d before, %d at the end; %+v",
		heapBase, heapMid, heapMid-heapBase, heapEnd, heapEnd-heapBase, goBase, goEnd, st)
	if !delivered || len(perStream) != 1 {
		t.Fatalf("the first stream did not deliver the large message and the one behind it (streams %v)", perStream)
	}
	if held := heapEnd - heapBase; held > 2 {
		t.Fatalf("%.1f MB still held once the 4 MiB message was written", held)
	}
}

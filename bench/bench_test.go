package bench

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuickThroughput keeps the harness from rotting: a few hundred
// tools/call against lifeline and the plain handler, JSON and SSE. It checks
// that calls succeed, never how fast they are.
func TestQuickThroughput(t *testing.T) {
	for _, name := range []string{Lifeline, Plain} {
		p, err := StartPeer(name, Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, sse := range []bool{false, true} {
			res, err := MeasureThroughput(p, 4, sse, 30*time.Second, 200)
			if err != nil {
				t.Errorf("%s sse=%v: %v", name, sse, err)
				continue
			}
			if res.Errors > 0 || res.Lat.N != 200 {
				t.Errorf("%s sse=%v: %d calls, %d errors (first %s)", name, sse, res.Lat.N, res.Errors, res.FirstEr)
			}
		}
		p.Close()
	}
}

// TestFloorThroughput checks that the floor answers a bench client's
// initialize and JSON tools/call, and that its 405 on DELETE does not fail
// a measurement (MeasureThroughput deletes its sessions at the end).
func TestFloorThroughput(t *testing.T) {
	p, err := StartPeer(Floor, Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Sessions || !p.JSONOnly {
		t.Errorf("floor: Sessions %v JSONOnly %v, want false, true", p.Sessions, p.JSONOnly)
	}
	res, err := MeasureThroughput(p, 4, false, 30*time.Second, 200)
	if err != nil {
		t.Fatalf("floor: %v", err)
	}
	if res.Errors > 0 || res.Lat.N != 200 {
		t.Errorf("floor: %d calls, %d errors (first %s)", res.Lat.N, res.Errors, res.FirstEr)
	}
}

// TestModernThroughputAndListen keeps the 2026-07-28 measurements from
// rotting: sessionless tools/call, JSON and SSE, against lifeline and stock
// mcp-go, and a few idle listen streams. It checks that calls succeed and
// that streams are acknowledged, never how fast.
func TestModernThroughputAndListen(t *testing.T) {
	for _, name := range []string{Lifeline, MCPGo} {
		sp, err := StartPeer(name, Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		p := sp.InEra(true)
		for _, sse := range []bool{false, true} {
			res, err := MeasureThroughput(p, 4, sse, 30*time.Second, 200)
			if err != nil {
				t.Errorf("%s sse=%v: %v", name, sse, err)
				continue
			}
			if (res.Errors > 0 && res.Short != res.Errors) || res.Lat.N+res.Errors != 200 {
				t.Errorf("%s sse=%v: %d calls, %d errors (first %s)", name, sse, res.Lat.N, res.Errors, res.FirstEr)
			}
			t.Logf("%s sse=%v: %d calls, %d short of progress, %d notifications lost", name, sse, res.Lat.N, res.Short, res.Lost)
		}
		idle, err := MeasureListenIdle(p, 8, 0)
		if err != nil || idle.Opened != 8 {
			t.Errorf("%s listen: %d of 8 opened: %v", name, idle.Opened, err)
		}
		sp.Close()
	}
}

// TestGoSDKModernThroughput checks that the Go SDK's peer answers
// sessionless 2026-07-28 tools/call (on its stateless handlers), JSON and
// SSE, so that its 2026-07-28 cells measure calls, not errors.
func TestGoSDKModernThroughput(t *testing.T) {
	sp, err := StartPeer(GoSDK, Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	p := sp.InEra(true)
	for _, sse := range []bool{false, true} {
		res, err := MeasureThroughput(p, 4, sse, 30*time.Second, 200)
		if err != nil {
			t.Errorf("sse=%v: %v", sse, err)
			continue
		}
		if res.Errors > 0 || res.Lat.N != 200 {
			t.Errorf("sse=%v: %d calls, %d errors (first %s)", sse, res.Lat.N, res.Errors, res.FirstEr)
		}
	}
}

// TestRedisThroughput checks that lifeline on a real redis-server
// (StartRedis, Options.Redis) answers tools/call, JSON and SSE, and
// session churn. It skips when redis-server is not on PATH.
func TestRedisThroughput(t *testing.T) {
	rb, err := StartRedis()
	if IsNoRedisServer(err) {
		t.Skipf("redis-server not found: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	p, err := StartPeer(Lifeline, Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second, Redis: rb})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, sse := range []bool{false, true} {
		res, err := MeasureThroughput(p, 4, sse, 30*time.Second, 200)
		if err != nil {
			t.Errorf("sse=%v: %v", sse, err)
			continue
		}
		if res.Errors > 0 || res.Lat.N != 200 {
			t.Errorf("sse=%v: %d calls, %d errors (first %s)", sse, res.Lat.N, res.Errors, res.FirstEr)
		}
	}
	if _, err := MeasureChurn(p, 2, 30*time.Second, 50); err != nil {
		t.Errorf("churn: %v", err)
	}
}

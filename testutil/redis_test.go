package testutil

import (
	"strings"
	"testing"
)

func TestStartRedisStopRestart(t *testing.T) {
	NoLeaks(t)
	r := StartRedisServer(t)
	if !strings.HasPrefix(r.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr = %q, want a loopback address", r.Addr())
	}
	if err := redisPing(r.Addr()); err != nil {
		t.Fatalf("PING after start: %v", err)
	}
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := redisPing(r.Addr()); err == nil {
		t.Fatal("PING answered while paused")
	}
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := redisPing(r.Addr()); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	r.Stop() // kills a paused server too
	r.Stop() // idempotent
	if err := r.Pause(); err == nil {
		t.Fatal("Pause of a stopped server succeeded")
	}
	if err := redisPing(r.Addr()); err == nil {
		t.Fatal("PING answered after Stop")
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := redisPing(r.Addr()); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	if err := r.Restart(); err != nil { // restarting a running server
		t.Fatal(err)
	}
	if err := redisPing(r.Addr()); err != nil {
		t.Fatalf("PING after the second Restart: %v", err)
	}
}

func TestStartRedisTwice(t *testing.T) {
	NoLeaks(t)
	a, b := StartRedis(t), StartRedis(t)
	if a == b {
		t.Fatalf("two servers on %s", a)
	}
	for _, addr := range []string{a, b} {
		if err := redisPing(addr); err != nil {
			t.Fatalf("PING %s: %v", addr, err)
		}
	}
}

func TestStartRedisSkipsWithoutBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var inner *testing.T
	t.Run("missing", func(t *testing.T) {
		inner = t
		StartRedis(t)
		t.Fatal("StartRedis returned without redis-server on PATH")
	})
	if !inner.Skipped() {
		t.Fatal("StartRedis did not skip the test")
	}
}

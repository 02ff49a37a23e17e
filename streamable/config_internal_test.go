package streamable

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/heartbeat"
	"github.com/lifeline-mcp/lifeline/sessionstore"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.effective()
	checks := []struct {
		name      string
		got, want any
	}{
		{"HeartbeatInterval", c.HeartbeatInterval, 20 * time.Second},
		{"MissedPongLimit", c.MissedPongLimit, 2},
		{"WriteTimeout", c.WriteTimeout, 10 * time.Second},
		{"CleanupTimeout", c.CleanupTimeout, 5 * time.Second},
		{"IdleTTL", c.IdleTTL, 30 * time.Minute},
		{"MaxSessions", c.MaxSessions, 10000},
		{"MaxBodyBytes", c.MaxBodyBytes, int64(4 << 20)},
		{"QueueSize", c.QueueSize, 512},
		{"RequestQueueSize", c.RequestQueueSize, 32},
		{"Clock", c.Clock, heartbeat.Clock(heartbeat.SystemClock{})},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("default %s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if c.Logger == nil || c.NewSessionID == nil {
		t.Error("Logger or NewSessionID has no default")
	}
	if _, ok := c.Store.(*sessionstore.Memory); !ok {
		t.Errorf("default Store is %T, want *sessionstore.Memory", c.Store)
	}
}

func TestDisabledTurnsHeartbeatAndExpiryOff(t *testing.T) {
	h := New(server.NewMCPServer("t", "1"), Config{HeartbeatInterval: Disabled, IdleTTL: Disabled})
	defer h.Close()
	if h.sched != nil {
		t.Error("a handler with heartbeats disabled runs a scheduler")
	}
	if h.cfg.IdleTTL != 0 {
		t.Errorf("IdleTTL = %v with expiry disabled", h.cfg.IdleTTL)
	}
	select {
	case <-h.sweepDone:
	default:
		t.Error("a handler with expiry disabled runs a sweeper")
	}
}

func TestProbeWaitAndLeaseBounds(t *testing.T) {
	h := &Handler{cfg: Config{HeartbeatInterval: 5 * time.Millisecond, MissedPongLimit: 2}}
	if got := h.probeWait(); got != 100*time.Millisecond {
		t.Errorf("probeWait at 5 ms = %v, want the 100 ms floor", got)
	}
	h.cfg.HeartbeatInterval = time.Minute
	if got := h.probeWait(); got != 2*time.Second {
		t.Errorf("probeWait at 1 min = %v, want the 2 s cap", got)
	}
	h.sched = &heartbeat.Scheduler{}
	if got := h.leaseTTL(); got != 3*time.Minute {
		t.Errorf("leaseTTL = %v, want 3 heartbeat intervals", got)
	}
}

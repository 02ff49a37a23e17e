package testutil_test

import (
	"io"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestFaultProxyArmConnsAfterBytes(t *testing.T) {
	hub := startHub(t, "a")
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}})
	hc := faultClient(t)
	s := openStream(t, hc, p.URL(), "s", nil)
	before := p.Stats().Down
	if n := p.ArmConns(nil, testutil.Fault{After: 10}); n != 1 {
		t.Fatalf("ArmConns armed %d, want 1", n)
	}
	hub.send(t, "s", strings.Repeat("x", 100))
	if err := s.ended(t); err == nil {
		t.Errorf("stream ended cleanly, want an error")
	}
	if st := p.Stats(); st.Down != before+10 || st.Cuts != 1 {
		t.Errorf("stats %+v, want 10 bytes down after arming (%d before), 1 cut", st, before)
	}
}

func TestFaultProxyArmEveryNewConnectionUntilDisarmed(t *testing.T) {
	hub := startHub(t, "a")
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}})
	hc := faultClient(t)
	get := func() error {
		resp, err := hc.Get(p.URL() + "/bytes?n=1000")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
	disarm := p.Arm(testutil.Fault{After: 120, Times: -1,
		Match: func(ci testutil.ConnInfo) bool { return ci.Requests == 1 }})
	for i := range 3 {
		if err := get(); err == nil {
			t.Fatalf("GET %d on a new connection: not cut", i)
		}
	}
	disarm()
	for i := range 2 {
		if err := get(); err != nil {
			t.Fatalf("GET %d after disarm: %v", i, err)
		}
	}
	if st := p.Stats(); st.Cuts != 3 || st.Conns != 4 {
		t.Errorf("stats %+v, want 3 cuts over 4 connections (the last kept alive)", st)
	}
}

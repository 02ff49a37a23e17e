package testutil_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestFaultProxyLongHeadPassesUnparsed(t *testing.T) {
	hub := startHub(t, "a")
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}})
	p.Arm(testutil.Fault{Times: -1}) // would cut every request it can parse
	req, _ := http.NewRequest(http.MethodPost, p.URL()+"/long", strings.NewReader("x"))
	req.Header.Set("X-Long", strings.Repeat("v", 100<<10)) // past the proxy's 64 KiB bound
	hc := faultClient(t)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "a POST /long" {
		t.Errorf("body %q", body)
	}
	if st := p.Stats(); st.Requests != 0 || st.Cuts != 0 {
		t.Errorf("stats %+v, want the head not parsed and nothing cut", st)
	}
}

func TestFaultProxyUpgradePassesThrough(t *testing.T) {
	// A backend that switches protocols and then echoes what it reads.
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		buf := make([]byte, 64)
		for {
			n, err := brw.Read(buf)
			if err != nil {
				return
			}
			conn.Write(buf[:n])
		}
	}))
	t.Cleanup(backend.Close)
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{backend.URL}})
	conn, err := net.DialTimeout("tcp", p.Addr(), faultWait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(faultWait))
	fmt.Fprint(conn, "GET /ws HTTP/1.1\r\nHost: backend\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v, %v", resp, err)
	}
	// No line end: a proxy still parsing HTTP would hold it back.
	fmt.Fprint(conn, "ping")
	got := make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo through the upgraded connection: %q, %v", got, err)
	}
}

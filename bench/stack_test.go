//go:build !race

package bench

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"testing"
	"time"
)

// envStackPeer names the peer a child of TestModernCallFitsA16KiBStack
// serves (unset in the parent).
const envStackPeer = "LIFELINE_BENCH_STACK_PEER"

// maxStack is the goroutine stack a 2026-07-28 tools/call must fit in:
// 16 KiB, where mcp-go's own handling of it fits (the floor).
const maxStack = 16 << 10

// TestModernCallFitsA16KiBStack holds the depth of lifeline's handler under
// mcp-go: a 2026-07-28 tools/call, JSON and with progress over SSE, runs
// within a 16 KiB goroutine stack, as mcp-go's own handling of it (the
// floor) does. mcp-go decodes the request's _meta recursively, deep in its
// HandleMessage, so every frame of lifeline's below that call counts; over
// 16 KiB, the runtime grows a connection's stack to 32 KiB each time the
// collector has shrunk it, and copies twice as much each time (BENCHMARKS.md,
// the change table's row on the 16 KiB stack). Each peer runs in a child process
// of this test whose goroutines may not grow past 16 KiB
// (debug.SetMaxStack): one that does ends the child with "stack overflow".
// Not built under the race detector, whose instrumentation deepens every
// frame: the bench module's tests run without it (.ci/run). The bound is
// the toolchain's and mcp-go's as much as lifeline's: after an upgrade of
// either, a failure here says which side no longer fits.
func TestModernCallFitsA16KiBStack(t *testing.T) {
	if name := os.Getenv(envStackPeer); name != "" {
		serveStackChild(t, name)
		return
	}
	for _, name := range []string{Floor, Lifeline} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestModernCallFitsA16KiBStack$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envStackPeer+"="+name)
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil {
			continue
		}
		head := out
		if len(head) > 4000 {
			head = head[:4000]
		}
		switch {
		case !bytes.Contains(out, []byte("goroutine stack exceeds")):
			t.Fatalf("%s's child failed, not on its stack: %v\n%s", name, err, head)
		case name == Floor:
			t.Fatalf("mcp-go's own handling of a 2026-07-28 tools/call no longer fits in %d bytes of stack, so this bound no longer holds for lifeline either: %v\n%s", maxStack, err, head)
		default:
			t.Fatalf("lifeline's handling of a 2026-07-28 tools/call needs more than %d bytes of stack, where mcp-go's fits: keep the handler's frames under HandleMessage shallow (servePost, serveModern): %v\n%s", maxStack, err, head)
		}
	}
}

// serveStackChild is the child's part: name's peer, every goroutine held
// to maxStack, answers 2026-07-28 tools/calls, each on a connection of its
// own (a new goroutine, its stack starting small): echo answered as JSON
// and, where the peer streams, bench_progress over SSE. A call of each
// comes first, before the bound, to fill encoding/json's caches of types
// (a deeper path, once per type).
func serveStackChild(t *testing.T, name string) {
	p, err := StartPeer(name, Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p = p.InEra(true)
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	calls := func(n int) {
		for _, sse := range []bool{false, true} {
			if sse && p.JSONOnly {
				continue
			}
			url, tool, args, want := p.JSONURL, ToolEcho, map[string]any{"text": "x"}, 0
			if sse {
				url, tool, args, want = p.URL, ToolProgress, map[string]any{}, 3
			}
			c := NewClient(url, tr)
			c.Modern = p.Modern
			for range n {
				m, progress, err := c.CallTool(ctx, tool, args, sse)
				if err != nil || m.Error != nil || progress != want {
					t.Fatalf("%s: tools/call %s: error %v, answer's error %+v, %d progress notifications (want %d)", name, tool, err, m.Error, progress, want)
				}
			}
		}
	}
	calls(1)
	debug.SetMaxStack(maxStack)
	calls(20)
}

package interop

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The 2026-07-28 tests: real clients on their defaults (no pinned
// version) speak the sessionless protocol to lifeline. This file has what
// the mcp-go and Go SDK variants share.

// modernVersion is the version both Go clients ask for by default.
const modernVersion = "2026-07-28"

// Notification methods the tests count.
const (
	methodProgress       = "notifications/progress"
	methodLog            = "notifications/message"
	methodToolsChanged   = "notifications/tools/list_changed"
	methodAck            = "notifications/subscriptions/acknowledged"
	methodPromptsChanged = "notifications/prompts/list_changed"
	// methodResourcesChanged and methodCustom are broadcast during the
	// burst but never subscribed to: they must not reach the client.
	methodResourcesChanged = "notifications/resources/list_changed"
	methodCustom           = "notifications/interop/custom"
)

// Sizes of the runs.
const (
	sequentialCalls = 300
	concurrentCalls = 300
	concurrency     = 16
	burstSize       = 1000
	burstRounds     = 3
)

// notes counts what a client's handlers received: progress and log
// notifications per call (by tag), list changes, and anything else by
// method.
type notes struct {
	mu          sync.Mutex
	progress    map[string]int
	logs        map[string]int
	toolChanges int
	promptsN    int
	other       map[string]int
}

func newNotes() *notes {
	return &notes{progress: map[string]int{}, logs: map[string]int{}, other: map[string]int{}}
}

// add records one notification; tag names the call it belongs to (progress
// and log messages only).
func (n *notes) add(method, tag string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch method {
	case methodProgress:
		n.progress[tag]++
	case methodLog:
		n.logs[tag]++
	case methodToolsChanged:
		n.toolChanges++
	case methodPromptsChanged:
		n.promptsN++
	default:
		n.other[method]++
	}
}

func (n *notes) changes() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.toolChanges
}

func (n *notes) promptChanges() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.promptsN
}

// others returns the notifications received other than progress, log
// messages, tools list changes and the subscription's acknowledgement.
func (n *notes) others() map[string]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]int{}
	for m, c := range n.other {
		if m != methodAck {
			out[m] = c
		}
	}
	return out
}

// loss is what calls lost of their notifications.
type loss struct {
	calls                 int
	progressLost, logLost int
	callsShort            int      // calls that lost at least one
	extra                 int      // notifications beyond what was sent
	examples              []string // a few calls that lost some
}

func (l loss) String() string {
	return fmt.Sprintf("%d of %d calls lost notifications: %d of %d progress and %d of %d log messages lost (%d extra); e.g. %v",
		l.callsShort, l.calls, l.progressLost, l.calls*progressSteps, l.logLost, l.calls*logLines, l.extra, l.examples)
}

// lost compares what arrived for tags with what each call sent.
func (n *notes) lost(tags []string) loss {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := loss{calls: len(tags)}
	for _, tag := range tags {
		p, g := n.progress[tag], n.logs[tag]
		l.progressLost += max(progressSteps-p, 0)
		l.logLost += max(logLines-g, 0)
		l.extra += max(p-progressSteps, 0) + max(g-logLines, 0)
		if p < progressSteps || g < logLines {
			l.callsShort++
			if len(l.examples) < 5 {
				l.examples = append(l.examples, fmt.Sprintf("%s: %d progress, %d log", tag, p, g))
			}
		}
	}
	return l
}

// waitDelivered waits, bounded, until every call of tags has all its
// notifications (a client may hand a notification to its handler after
// the call returned), and returns what is still missing.
func (n *notes) waitDelivered(tags []string) loss {
	deadline := time.Now().Add(wait)
	for {
		l := n.lost(tags)
		if l.callsShort == 0 || time.Now().After(deadline) {
			return l
		}
		time.Sleep(5 * time.Millisecond) // bounded poll: the handlers signal nothing
	}
}

// runCalls calls call for sequentialCalls tags one by one, then for
// concurrentCalls tags with concurrency callers at once, and returns the
// tags. The first error stops the run.
func runCalls(ctx context.Context, call func(ctx context.Context, tag string) error) ([]string, error) {
	var tags []string
	for i := range sequentialCalls {
		tag := fmt.Sprintf("seq-%03d", i)
		tags = append(tags, tag)
		if err := call(ctx, tag); err != nil {
			return tags, fmt.Errorf("%s: %w", tag, err)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan string)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for tag := range work {
				if err := call(ctx, tag); err != nil {
					cancel(fmt.Errorf("%s: %w", tag, err))
				}
			}
		})
	}
	for i := range concurrentCalls {
		tag := fmt.Sprintf("par-%03d", i)
		select {
		case work <- tag:
			tags = append(tags, tag)
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return tags, context.Cause(ctx)
}

// checkModernWire checks that every request the client made spoke
// 2026-07-28 without a session: MCP-Protocol-Version 2026-07-28, no
// Mcp-Session-Id, POST only, no initialize, server/discover first and no
// Mcp-Session-Id in any answer. It returns the exchanges.
func checkModernWire(t *testing.T, h *harness) []exchange {
	t.Helper()
	exs := h.Wire.exchanges()
	if len(exs) == 0 || exs[0].RPC != "server/discover" {
		t.Fatalf("the client did not start with server/discover\nwire:\n%s", h.Wire.dump(""))
	}
	for _, ex := range exs {
		if ex.Version != modernVersion || ex.SessionID != "" || ex.Method != http.MethodPost || ex.RPC == "initialize" {
			t.Fatalf("exchange %v: want a POST with MCP-Protocol-Version %s and no Mcp-Session-Id", ex, modernVersion)
		}
		if ex.AnsweredSessionID != "" {
			t.Fatalf("exchange %v answered with Mcp-Session-Id %s", ex, ex.AnsweredSessionID)
		}
	}
	if h.H.Stats().Sessions != 0 {
		t.Fatalf("%d sessions on the sessionless protocol", h.H.Stats().Sessions)
	}
	return exs
}

// checkProgressRun reports the run's wire and fails the test if any call
// lost a notification.
func checkProgressRun(t *testing.T, h *harness, n *notes, tags []string, runErr error) {
	t.Helper()
	if runErr != nil {
		t.Fatalf("calls: %v", runErr)
	}
	exs := checkModernWire(t, h)
	calls, wireProgress, wireLogs := 0, 0, 0
	for _, ex := range exs {
		if ex.RPC == "tools/call" {
			calls++
			wireProgress += strings.Count(ex.Body, methodProgress)
			wireLogs += strings.Count(ex.Body, methodLog)
		}
	}
	if calls != len(tags) {
		t.Errorf("%d tools/call requests on the wire, want %d", calls, len(tags))
	}
	l := n.waitDelivered(tags)
	t.Logf("%d calls (%d sequential, %d at %d-way concurrency) over %d requests, all MCP-Protocol-Version %s, no Mcp-Session-Id; "+
		"written on the calls' answers: %d of %d progress and %d of %d log messages; %v",
		len(tags), sequentialCalls, concurrentCalls, concurrency, len(exs), modernVersion,
		wireProgress, len(tags)*progressSteps, wireLogs, len(tags)*logLines, l)
	if l.callsShort != 0 || l.extra != 0 {
		t.Errorf("notifications lost: %v", l)
		if len(l.examples) > 0 {
			short, _, _ := strings.Cut(l.examples[0], ":")
			for _, ex := range exs {
				if ex.RPC == "tools/call" && strings.Contains(ex.Request, `"tag":"`+short+`"`) {
					t.Logf("the answer to %s (%s):\n%s", short, ex, ex.Body)
				}
			}
		}
	}
	if o := n.others(); len(o) != 0 {
		t.Errorf("unexpected notifications: %v", o)
	}
}

// listenExchange returns the client's subscriptions/listen exchange once
// its acknowledgement is written (bounded). The listen must ask for tools
// and prompts list changes.
func listenExchange(t *testing.T, h *harness) exchange {
	t.Helper()
	var got exchange
	deadline := time.Now().Add(wait)
	for {
		listens := h.Wire.find(func(ex exchange) bool {
			return ex.RPC == "subscriptions/listen" && strings.Contains(ex.Body, methodAck)
		})
		if len(listens) == 1 {
			got = listens[0]
			break
		}
		if len(listens) > 1 || time.Now().After(deadline) {
			t.Fatalf("want one acknowledged subscriptions/listen within %v, got %d\nwire:\n%s", wait, len(listens), h.Wire.dump(""))
		}
		time.Sleep(2 * time.Millisecond) // bounded poll on the recorder
	}
	for _, want := range []string{`"toolsListChanged":true`, `"promptsListChanged":true`} {
		if !strings.Contains(got.Request, want) {
			t.Fatalf("listen request %s does not ask for %s", got.Request, want)
		}
	}
	return got
}

// listenBody returns what has been written on the listen exchange seq.
func listenBody(h *harness, seq int) string {
	for _, ex := range h.Wire.exchanges() {
		if ex.Seq == seq {
			return ex.Body
		}
	}
	return ""
}

// waitCount waits, bounded, until count() > floor, and reports whether it
// got there.
func waitCount(count func() int, floor int) bool {
	deadline := time.Now().Add(wait)
	for count() <= floor {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond) // bounded poll: counted by the client's handler
	}
	return true
}

// checkListen drives a listen stream opened for tools and prompts list
// changes. A tool added reaches the client as a tools list change. Then a
// burst: burstSize tools list changes (with unsubscribed resources list
// changes and custom notifications mixed in), and last a prompt added:
// list changes may be coalesced, but the prompts change comes after every
// other and must reach the client before the next round (burstRounds).
// Every list change written must reach the client; nothing unsubscribed
// may.
// hasTool reports whether the client's tools/list names a tool.
func checkListen(t *testing.T, h *harness, n *notes, hasTool func(name string) bool) {
	t.Helper()
	listen := listenExchange(t, h)
	if listen.Status != http.StatusOK {
		t.Fatalf("listen answered %d", listen.Status)
	}

	before := n.changes()
	h.S.AddTool(newAddedTool("interop_added"), addedHandler)
	if !waitCount(n.changes, before) {
		t.Fatalf("no tools list change within %v after a tool was added\nlisten stream:\n%s", wait, listenBody(h, listen.Seq))
	}
	if !hasTool("interop_added") {
		t.Fatal("tools/list after the list change does not name interop_added")
	}

	before = n.changes()
	if p := n.promptChanges(); p != 0 {
		t.Fatalf("%d prompts list changes before any prompt changed", p)
	}
	for round := 1; round <= burstRounds; round++ {
		for i := range burstSize {
			h.S.SendNotificationToAllClients(methodToolsChanged, nil)
			if i%10 == 0 {
				h.S.SendNotificationToAllClients(methodResourcesChanged, nil)
				h.S.SendNotificationToAllClients(methodCustom, map[string]any{"i": i})
			}
		}
		h.S.AddPrompt(newAddedPrompt(fmt.Sprintf("interop_final_%d", round)), addedPromptHandler) // the last change
		if !waitCount(n.promptChanges, round-1) {
			t.Fatalf("round %d: the prompts list change made after a burst of %d tools list changes did not reach the client within %v; "+
				"%d of the %d tools list changes of the rounds did (%d written on the stream)",
				round, burstSize, wait, n.changes()-before, round*burstSize, strings.Count(listenBody(h, listen.Seq), methodToolsChanged))
		}
	}
	// Every list change written reaches the client's handler.
	deadline := time.Now().Add(wait)
	for {
		body := listenBody(h, listen.Seq)
		written, got := strings.Count(body, methodToolsChanged), n.changes()
		if got == written && n.promptChanges() == strings.Count(body, methodPromptsChanged) {
			t.Logf("%d rounds of a burst of %d tools list changes (+%d resources list changes and %d custom notifications, unsubscribed) "+
				"then a prompt added: %d tools and %d prompts list changes reached the client (%d tools list changes in all)",
				burstRounds, burstSize, burstSize/10, burstSize/10, got-before, n.promptChanges(), got)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tools list changes written on the listen stream, the client counted %d", written, got)
		}
		time.Sleep(2 * time.Millisecond) // bounded poll: counted by the client's handler
	}
	body := listenBody(h, listen.Seq)
	for _, m := range []string{methodResourcesChanged, methodCustom, methodProgress, methodLog} {
		if strings.Contains(body, m) {
			t.Errorf("%s written on a listen stream that asked for tools and prompts list changes only", m)
		}
	}
	if o := n.others(); len(o) != 0 {
		t.Errorf("unsubscribed notifications reached the client: %v", o)
	}
	if acks := strings.Count(body, methodAck); acks != 1 || strings.Index(body, methodAck) > strings.Index(body, methodToolsChanged) {
		t.Errorf("the listen stream has %d acknowledgements, want one, before any list change", acks)
	}
}

// checkAskWire checks the input-required round trip on the wire: two
// tools/call of toolAsk, the first answered input_required with askState,
// the retry carrying inputResponses and askState.
func checkAskWire(t *testing.T, h *harness) {
	t.Helper()
	calls := h.Wire.find(func(ex exchange) bool {
		return ex.RPC == "tools/call" && strings.Contains(ex.Request, toolAsk)
	})
	if len(calls) != 2 {
		t.Fatalf("%d tools/call of %s on the wire, want 2 (ask, retry)\nwire:\n%s", len(calls), toolAsk, h.Wire.dump(""))
	}
	first, retry := calls[0], calls[1]
	if !strings.Contains(first.Body, `"input_required"`) || !strings.Contains(first.Body, askState) {
		t.Errorf("first round answered %s, want input_required with requestState %s", first.Body, askState)
	}
	if !strings.Contains(retry.Request, `"inputResponses"`) || !strings.Contains(retry.Request, askState) ||
		retry.RPCID == first.RPCID {
		t.Errorf("retry %s (id %s after %s): want inputResponses, requestState %s and a new id", retry.Request, retry.RPCID, first.RPCID, askState)
	}
	t.Logf("round 1: %s\n  -> %s\nround 2: %s\n  -> %s", first.Request, first.Body, retry.Request, retry.Body)
}

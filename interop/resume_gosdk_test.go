package interop

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// connectResumingGoSDK connects the Go SDK v1.8.0 client at 2025-11-25 (the
// 2026-07-28 default has no resumable streams) through the rig's proxy,
// recording the progress and log notifications it hands the application.
// Its transport is left on its defaults: MaxRetries 5, the standalone GET
// stream on.
func connectResumingGoSDK(t *testing.T, ctx context.Context, r *resumeRig) (*mcp.ClientSession, *deliveries) {
	t.Helper()
	d := newDeliveries()
	client := mcp.NewClient(&mcp.Implementation{Name: "interop-gosdk-resume", Version: "1.0.0"}, &mcp.ClientOptions{
		Logger: logger(r.h, "go-sdk"),
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			d.addLog(req.Params.Data)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			d.addProgress(req.Params.Progress)
		},
	})
	tr := &mcp.StreamableClientTransport{Endpoint: r.endpoint, HTTPClient: r.h.HTTP}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: pinnedVersion})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, d
}

// The Go SDK client resumes a tools/call whose answer stream is cut in the
// middle of an event after about two steps: its handleSSE reconnects with
// a GET carrying the last event id it got (after the server's retry, 1 s),
// and lifeline replays the rest of the call's stream and follows it live
// to the answer. Every progress notification and log message arrives
// once, in order, and CallTool returns the result.
func TestGoSDKResumesACutCallStream(t *testing.T) {
	r := startResumeRig(t)
	ctx := testutil.Context(t, wait)
	cs, d := connectResumingGoSDK(t, ctx, r)

	r.cutCall("")
	params := &mcp.CallToolParams{Name: toolDemoProgress,
		Arguments: map[string]any{"steps": callSteps, "delay_ms": callDelayMS}}
	params.SetProgressToken("gosdk-resume")
	got, err := callParams(ctx, cs, params)
	if want := fmt.Sprintf("done %d steps", callSteps); err != nil || got != want {
		t.Fatalf("call through the cut: %q, %v; want %q", got, err, want)
	}
	d.waitCall(t)
	r.checkCallResumed(t)
	mustEcho(t, ctx, cs, "after the resumed call")
}

// The Go SDK client's standalone GET stream is cut in the middle of an
// event while a burst of 300 notifications flows on it: the client
// reconnects with the last event id it got, lifeline replays what the cut
// lost and goes on live. Every notification arrives once, and so does a
// second burst sent after the resume.
func TestGoSDKResumesACutStandaloneStream(t *testing.T) {
	r := startResumeRig(t)
	ctx := testutil.Context(t, wait)
	r.cutGet()
	cs, d := connectResumingGoSDK(t, ctx, r)
	testutil.Eventually(t, wait, "the standalone stream", func() bool { return r.h.H.Stats().GetStreams == 1 })

	notify := func(count, bytes int) {
		t.Helper()
		got, err := callText(ctx, cs, toolDemoNotify, map[string]any{"count": count, "bytes": bytes})
		if want := fmt.Sprintf("sent %d notifications", count); err != nil || got != want {
			t.Fatalf("%s: %q, %v; want %q", toolDemoNotify, got, err, want)
		}
	}
	notify(burstCount, burstBytes)
	testutil.Eventually(t, wait, "the first burst, through the cut", func() bool {
		return d.count(burstBytes) == burstCount && len(r.resumes("get/")) == 1
	})
	notify(lateCount, lateBytes)
	testutil.Eventually(t, wait, "the second burst", func() bool { return d.count(lateBytes) == lateCount })
	d.checkNotes(t, burstBytes, burstCount)
	d.checkNotes(t, lateBytes, lateCount)
	r.checkGetResumed(t)
}

// The Go SDK client's call is cut right after the priming event that opens
// its answer, inside the first progress event: the only id the client got
// is the priming event's, and it resumes from it. Every progress
// notification and log message arrives once (before lifeline stored the
// priming event ahead of the messages it opens the stream with, step 1,
// written in the same write, was lost), and CallTool returns the result.
func TestGoSDKResumesACallCutRightAfterItsPrimingEvent(t *testing.T) {
	r := startResumeRig(t)
	ctx := testutil.Context(t, wait)
	cs, d := connectResumingGoSDK(t, ctx, r)

	r.cutCallAfterPriming(t, cs.ID(), "")
	params := &mcp.CallToolParams{Name: toolDemoProgress,
		Arguments: map[string]any{"steps": callSteps, "delay_ms": callDelayMS}}
	params.SetProgressToken("gosdk-resume")
	got, err := callParams(ctx, cs, params)
	if want := fmt.Sprintf("done %d steps", callSteps); err != nil || got != want {
		r.checkResumedFromPriming(t) // says where the cut came, if not where it was meant to
		t.Fatalf("call through the cut: %q, %v; want %q", got, err, want)
	}
	d.waitCall(t)
	r.checkCallResumed(t)
	r.checkResumedFromPriming(t)
}

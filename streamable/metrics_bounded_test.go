package streamable_test

import (
	"fmt"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Names a client invents (tools and prompts the server does not have,
// methods, protocol versions) never become attribute values of the
// operation metric: its sets stay the server's own.
func TestMetricsClientInventedNamesAreNotAttributes(t *testing.T) {
	mr := newMeterRig(t)
	r := newRig(t, streamable.Config{MeterProvider: mr.mp})
	c := r.session()
	ctx := testutil.Context(t, wait)
	for i := range 20 {
		if _, err := c.CallTool(ctx, fmt.Sprintf("no-such-tool-%d", i), map[string]any{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call(ctx, "prompts/get", map[string]any{"name": fmt.Sprintf("no-such-prompt-%d", i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call(ctx, fmt.Sprintf("no/such-method-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	old := c.ProtocolVersion
	c.ProtocolVersion = "2099-01-01"
	_, _ = c.CallTool(ctx, "echo", map[string]any{"text": "x"})
	c.ProtocolVersion = old
	ms := mr.collect()
	if n := len(ms.points("mcp.server.operation.duration")); n > 6 {
		t.Errorf("%d attribute sets after invented names, want a handful\n%s", n, ms.dump("mcp.server.operation.duration"))
	}
}

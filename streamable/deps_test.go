package streamable_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The library depends on OpenTelemetry's API only: no SDK, exporter or
// Prometheus client is linked into an application that imports it (the
// demo, tests and benchmarks use them).
func TestLibraryImportsNoTelemetrySDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps",
		"github.com/lifeline-mcp/lifeline/streamable",
		"github.com/lifeline-mcp/lifeline/server",
		"github.com/lifeline-mcp/lifeline/heartbeat",
		"github.com/lifeline-mcp/lifeline/sessionstore/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "github.com/prometheus/"} {
			if strings.HasPrefix(pkg, banned) {
				t.Errorf("the library imports %s", pkg)
			}
		}
	}
}

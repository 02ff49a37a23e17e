package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// dashboardPath is the Grafana dashboard, from this package's directory.
const dashboardPath = "../../docs/grafana-lifeline.json"

// dashboardQueries returns every PromQL expression of the dashboard's
// panels.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	if len(exprs) == 0 {
		t.Fatal("the dashboard has no query")
	}
	return exprs
}

var (
	// matchers are label matchers ({...}), grouping clauses the label
	// lists of by/without, and range selectors [...].
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promGrouping = regexp.MustCompile(`\b(by|without)\s*\(([^)]*)\)`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promStrings  = regexp.MustCompile(`"[^"]*"`)
)

// promNames returns the metric names and the grouping labels expr uses: its
// identifiers that are not functions, keywords, labels or numbers.
func promNames(expr string) (metrics, labels []string) {
	for _, m := range promGrouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[2], ",") {
			labels = append(labels, strings.TrimSpace(l))
		}
	}
	e := promGrouping.ReplaceAllString(expr, " ")
	e = promMatchers.ReplaceAllString(e, " ")
	e = promRanges.ReplaceAllString(e, " ")
	e = promStrings.ReplaceAllString(e, " ")
	for _, id := range promIdent.FindAllString(e, -1) {
		if strings.HasSuffix(id, "(") {
			continue // a function
		}
		switch id {
		case "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or", "unless":
			continue
		}
		metrics = append(metrics, id)
	}
	return metrics, labels
}

func TestPromNames(t *testing.T) {
	m, l := promNames(`histogram_quantile(0.99, sum by (le, mcp_method_name) (rate(mcp_server_operation_duration_seconds_bucket{error_type!="x"}[$__rate_interval])))`)
	if !slices.Equal(m, []string{"mcp_server_operation_duration_seconds_bucket"}) || !slices.Equal(l, []string{"le", "mcp_method_name"}) {
		t.Fatalf("metrics %v, labels %v", m, l)
	}
}

// scrapeNames returns the sample names and label names of a Prometheus
// text exposition.
func scrapeNames(body string) (samples, labels map[string]bool) {
	samples, labels = map[string]bool{}, map[string]bool{}
	labelName := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line+" ", "{ ")]
		samples[name] = true
		for _, m := range labelName.FindAllStringSubmatch(line, -1) {
			labels[m[1]] = true
		}
	}
	return samples, labels
}

// missingFromScrape returns, for each metric or grouping label of exprs
// that body, a Prometheus text exposition, lacks, what is missing.
func missingFromScrape(exprs []string, body string) []string {
	samples, labels := scrapeNames(body)
	var missing []string
	for _, e := range exprs {
		metrics, groups := promNames(e)
		if len(metrics) == 0 {
			missing = append(missing, fmt.Sprintf("query %q names no metric", e))
		}
		for _, m := range metrics {
			if !samples[m] {
				missing = append(missing, fmt.Sprintf("query %q: no %s in the scrape", e, m))
			}
		}
		for _, l := range groups {
			if l != "le" && !labels[l] {
				missing = append(missing, fmt.Sprintf("query %q: no label %s in the scrape", e, l))
			}
		}
	}
	return missing
}

// TestDashboardQueriesExistingMetrics: every metric the Grafana dashboard
// queries, and every label it groups by, is in a scrape of the demo's
// /metrics after a scenario that makes each of them move: sessions
// created, called and deleted, a GET stream, a 409, a takeover of a dead
// peer's stream, a stalled reader's stream overflowing and hitting its
// write deadline.
func TestDashboardQueriesExistingMetrics(t *testing.T) {
	exprs := dashboardQueries(t)
	logs := newLogBuffer(t)
	addr, stop := startDemo(t, logs, "-addr", "127.0.0.1:0", "-metrics", "-heartbeat", "100ms", "-write-timeout", "200ms")
	base := "http://" + addr
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	ctx := testutil.Context(t, wait)
	session := func() *testutil.Client {
		c := testutil.NewClient(base + "/mcp")
		c.HTTP = hc
		if _, err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		return c
	}
	scrape := func() string {
		status, body := get(ctx, t, hc, base+"/metrics")
		if status != http.StatusOK {
			t.Fatalf("GET /metrics: %d", status)
		}
		return body
	}
	demoScenario(ctx, t, base, hc)

	// A 409: a second GET while the first is live.
	live := session()
	first, err := live.OpenStream(ctx)
	if err != nil || first.Status != http.StatusOK {
		t.Fatalf("GET: %v %+v", err, first)
	}
	defer first.Close()
	first.AnswerPings(true)
	if second, err := live.OpenStream(ctx); err != nil || second.Status != http.StatusConflict {
		t.Fatalf("second GET: %v %+v, want 409", err, second)
	}

	// A takeover: a stream that answered a ping, then fell silent, is
	// taken over by the client's new GET. (Its heartbeat may close it as
	// dead first, a dead peer but no takeover: then again, a few times.)
	for try := 0; try < 3 && !strings.Contains(scrape(), "lifeline_streams_takeovers_total"); try++ {
		c := session()
		old, err := c.OpenStream(ctx)
		if err != nil || old.Status != http.StatusOK {
			t.Fatalf("GET: %v %+v", err, old)
		}
		ping, err := old.NextMatching(ctx, func(m testutil.Message) bool { return m.IsRequest() && m.Method == "ping" })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Reply(ctx, ping.ID, map[string]any{}); err != nil {
			t.Fatal(err)
		}
		next, err := c.OpenStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		old.Close()
		next.Close()
	}

	// A stalled reader: its stream's queue overflows (refused, squeezed)
	// and its write hits the deadline.
	stalled := session()
	sr, err := testutil.DialStalledStream(ctx, base+"/mcp", stalled.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled GET: %q, %v", status, err)
	}
	if _, err := stalled.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 1000, "bytes": 16 << 10}); err != nil {
		t.Fatal(err)
	}

	// The scenario's last moves (the stalled write's deadline) land within
	// a bounded wait.
	var missing []string
	for deadline := time.Now().Add(wait / 2); ; {
		missing = missingFromScrape(exprs, scrape())
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // spacing the scrapes of a bounded poll
	}
	for _, m := range missing {
		t.Error(m)
	}
	sr.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

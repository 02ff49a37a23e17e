package interop

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// clusterHeartbeat is the replicas' heartbeat in the cluster tests: pings
// come often enough for the tests to see a client answer one, and each
// answer, POSTed through the proxy, usually reaches another replica than
// the stream's.
const clusterHeartbeat = 200 * time.Millisecond

// replica is one lifeline transport of a cluster, on its own loopback
// httptest server, with its own Redis client and store, every exchange
// recorded by its wire.
type replica struct {
	Name string
	H    *streamable.Handler
	Wire *wire
}

// cluster is three replicas sharing one redis-server under a prefix of
// their own, behind a round-robin proxy: the deployment of a load balancer
// without sticky sessions in front of several lifeline processes.
type cluster struct {
	Replicas []*replica
	Proxy    *testutil.RoundRobinProxy
	// URL is the MCP endpoint through the proxy; clients use only this.
	URL string
	// HTTP is the proxy server's client; closing the server closes its
	// idle connections.
	HTTP *http.Client
	// Log collects the replicas' logs (and the clients'), printed when a
	// test fails.
	Log *lockedBuffer
}

// startCluster starts a redis-server (the test skips, naming the binary,
// without one), three replicas of the interop server on it with cfg, and
// the proxy in front. Everything stops when the test ends: the proxy,
// then the handlers, their servers, stores and Redis clients, then Redis.
func startCluster(t *testing.T, cfg streamable.Config) *cluster {
	t.Helper()
	rs := testutil.StartRedisServer(t) // its cleanup (Stop) runs last
	c := &cluster{Log: &lockedBuffer{}}
	opts := redisstore.Options{Prefix: "interop" + rand.Text()[:8] + ":"}
	clock := &atomic.Int64{}

	type parts struct {
		srv   *httptest.Server
		store *redisstore.Store
		rc    *redis.Client
	}
	var started []parts
	var proxySrv *httptest.Server
	t.Cleanup(func() {
		if c.Proxy != nil {
			c.Proxy.Close()
			proxySrv.Close()
			c.Proxy.Close() // connections the last requests returned to the pool
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		for _, r := range c.Replicas {
			if err := r.H.Shutdown(ctx); err != nil {
				t.Errorf("replica %s: Shutdown: %v", r.Name, err)
			}
		}
		for _, p := range started {
			p.srv.Close()
		}
		for _, p := range started {
			_ = p.store.Close()
		}
		for _, p := range started {
			_ = p.rc.Close()
		}
		if t.Failed() {
			t.Logf("logs:\n%s", c.Log.String())
		}
	})

	var urls []string
	for _, name := range []string{"A", "B", "C"} {
		rc := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
		store := redisstore.New(rc, opts)
		rcfg := cfg
		rcfg.Store = store
		rcfg.Logger = slog.New(slog.NewTextHandler(c.Log, &slog.HandlerOptions{Level: slog.LevelDebug})).
			With("src", "lifeline", "replica", name)
		h := streamable.New(newMCPServer(), rcfg)
		w := &wire{next: h, clock: clock}
		srv := httptest.NewServer(w) // 127.0.0.1
		started = append(started, parts{srv: srv, store: store, rc: rc})
		c.Replicas = append(c.Replicas, &replica{Name: name, H: h, Wire: w})
		urls = append(urls, srv.URL)
	}
	rr, err := testutil.NewRoundRobinProxy(urls...)
	if err != nil {
		t.Fatal(err)
	}
	proxySrv = httptest.NewServer(rr)
	c.Proxy, c.URL, c.HTTP = rr, proxySrv.URL+"/mcp", proxySrv.Client()
	return c
}

// logger writes to the cluster's log, tagged with src.
func (c *cluster) logger(src string) *slog.Logger {
	return slog.New(slog.NewTextHandler(c.Log, &slog.HandlerOptions{Level: slog.LevelDebug})).With("src", src)
}

// name returns replica i's name, "?" for -1.
func (c *cluster) name(i int) string {
	if i < 0 || i >= len(c.Replicas) {
		return "?"
	}
	return c.Replicas[i].Name
}

// names returns the names of replicas is.
func (c *cluster) names(is []int) []string {
	out := make([]string, 0, len(is))
	for _, i := range is {
		out = append(out, c.name(i))
	}
	return out
}

// served is an exchange and the index of the replica that had it.
type served struct {
	Replica int
	exchange
}

// find returns the exchanges of every replica that match keep, in the
// order they began.
func (c *cluster) find(keep func(exchange) bool) []served {
	var out []served
	for i, r := range c.Replicas {
		for _, ex := range r.Wire.find(keep) {
			out = append(out, served{Replica: i, exchange: ex})
		}
	}
	slices.SortFunc(out, func(a, b served) int { return a.Seq - b.Seq })
	return out
}

// dump formats every exchange of the cluster in order, each with its
// replica.
func (c *cluster) dump() string {
	var b strings.Builder
	for _, s := range c.find(func(exchange) bool { return true }) {
		fmt.Fprintf(&b, "%s %s\n", c.Replicas[s.Replica].Name, s.exchange)
	}
	return b.String()
}

// counts returns how many requests each replica got so far.
func (c *cluster) counts() []int {
	out := make([]int, len(c.Replicas))
	for i, r := range c.Replicas {
		out[i] = len(r.Wire.exchanges())
	}
	return out
}

// requireSpread fails the test unless every replica got some of the
// requests (counts), so that the conversation really went through all
// three.
func (c *cluster) requireSpread(t *testing.T, counts []int) {
	t.Helper()
	for i, n := range counts {
		if n == 0 {
			t.Errorf("replica %s got no request (per replica: %v)\nwire:\n%s", c.Replicas[i].Name, counts, c.dump())
		}
	}
}

// streamHolder waits for sid's GET stream to be open and returns the
// replica holding it: the one with an open GET stream whose GET was
// answered 200 (lifeline answers only once it holds the stream's lease and
// listens on the session's bus).
func (c *cluster) streamHolder(t *testing.T, sid string) int {
	t.Helper()
	holder := -1
	testutil.Eventually(t, wait, "the client's GET stream to open on a replica", func() bool {
		holder = -1
		for i, r := range c.Replicas {
			if r.H.Stats().GetStreams == 0 {
				continue
			}
			if len(r.Wire.find(func(ex exchange) bool {
				return ex.Method == http.MethodGet && ex.SessionID == sid && ex.Status == http.StatusOK
			})) == 0 {
				continue
			}
			if holder >= 0 {
				t.Fatalf("GET streams open on replicas %d and %d\nwire:\n%s", holder, i, c.dump())
			}
			holder = i
		}
		return holder >= 0
	})
	return holder
}

// callAway runs call with the proxy pinned to the replica after holder, so
// that what the call sends on the session's GET stream has to cross to
// another replica. tag is unique per attempt, and servedBy finds the
// replica that served the attempt with tag. A concurrent request (a ping's
// answer) can take the pinned turn: then the call is made again, at most
// three times. It returns the replica that served the call and its tag.
func (c *cluster) callAway(t *testing.T, holder int, what string, call func(tag string), servedBy func(tag string) int) (int, string) {
	t.Helper()
	target := (holder + 1) % len(c.Replicas)
	for attempt := 1; ; attempt++ {
		tag := fmt.Sprintf("%s-%d", what, attempt)
		c.Proxy.Pin(target)
		call(tag)
		got := servedBy(tag)
		if got != holder {
			return got, tag
		}
		if attempt == 3 {
			t.Fatalf("%s: %d attempts were all served by the stream's replica %s\nwire:\n%s",
				what, attempt, c.Replicas[holder].Name, c.dump())
		}
		t.Logf("%s: a concurrent request took the pinned turn; again", what)
	}
}

// toolCallReplica returns the replica that served the tools/call whose
// request contains marker, or -1.
func (c *cluster) toolCallReplica(marker string) int {
	got := c.find(func(ex exchange) bool { return ex.RPC == "tools/call" && strings.Contains(ex.Request, marker) })
	if len(got) != 1 {
		return -1
	}
	return got[0].Replica
}

// checkNotifiedOnStream checks on the wire that the notification carrying
// text went out once, on sid's GET stream on replica holder, and on no
// POST's answer.
func (c *cluster) checkNotifiedOnStream(t *testing.T, sid string, holder int, text string) {
	t.Helper()
	onGET := c.find(func(ex exchange) bool {
		return ex.Method == http.MethodGet && ex.SessionID == sid && strings.Contains(ex.Body, text)
	})
	onPOST := c.find(func(ex exchange) bool { return ex.Method == http.MethodPost && strings.Contains(ex.Body, text) })
	if len(onGET) != 1 || onGET[0].Replica != holder || len(onPOST) != 0 {
		t.Errorf("notification %q went out on GET answers %v and POST answers %v; want once on the stream of replica %s\nwire:\n%s",
			text, onGET, onPOST, c.Replicas[holder].Name, c.dump())
	}
}

// checkSampled checks on the wire where the sampling request for prompt
// went out (on sid's GET stream on replica holder when onStream, else on
// the tools/call's own answer) and that the client's answer carrying reply
// was POSTed and answered 202. It returns the replica that got the answer.
func (c *cluster) checkSampled(t *testing.T, sid string, holder int, prompt, reply string, onStream bool) int {
	t.Helper()
	isRequest := func(ex exchange) bool {
		return strings.Contains(ex.Body, "sampling/createMessage") && strings.Contains(ex.Body, prompt)
	}
	onGET := c.find(func(ex exchange) bool { return ex.Method == http.MethodGet && ex.SessionID == sid && isRequest(ex) })
	onCall := c.find(func(ex exchange) bool {
		return ex.RPC == "tools/call" && strings.Contains(ex.Request, prompt) && isRequest(ex)
	})
	switch {
	case onStream && (len(onGET) != 1 || onGET[0].Replica != holder || len(onCall) != 0):
		t.Errorf("sampling for %q went out on GET answers %v and call answers %v; want on the stream of replica %s\nwire:\n%s",
			prompt, onGET, onCall, c.Replicas[holder].Name, c.dump())
	case !onStream && (len(onCall) != 1 || len(onGET) != 0):
		t.Errorf("sampling for %q went out on GET answers %v and call answers %v; want on the call's own answer\nwire:\n%s",
			prompt, onGET, onCall, c.dump())
	}
	// The tool may see the answer before its POST has been answered 202.
	var answers []served
	testutil.Eventually(t, wait, "the sampling answer's POST to be answered 202", func() bool {
		answers = c.find(func(ex exchange) bool {
			return ex.RPC == "response" && ex.SessionID == sid && strings.Contains(ex.Request, reply)
		})
		return len(answers) == 1 && answers[0].Status == http.StatusAccepted
	})
	return answers[0].Replica
}

// waitPingAnswered waits for a heartbeat ping's answer ({} POSTed) to be
// answered 202 on any replica, and returns the replicas that got one.
func (c *cluster) waitPingAnswered(t *testing.T, sid string) []int {
	t.Helper()
	var pongs []served
	testutil.Eventually(t, wait, "the client to answer a heartbeat ping", func() bool {
		pongs = c.find(func(ex exchange) bool {
			return ex.RPC == "response" && ex.SessionID == sid && strings.Contains(ex.Request, `"result":{}`) &&
				ex.Status == http.StatusAccepted
		})
		return len(pongs) > 0
	})
	var out []int
	for _, p := range pongs {
		out = append(out, p.Replica)
	}
	return out
}

// checkHeaders checks that every request but initialize named sid and
// version, and initialize none; only the requests before the one numbered
// before (Seq) when it is not 0. With getMayOmitVersion, a GET without
// MCP-Protocol-Version passes (a client that opens its stream before it
// has recorded the negotiated version; the server then assumes one).
func (c *cluster) checkHeaders(t *testing.T, sid, version string, before int, getMayOmitVersion bool) {
	t.Helper()
	for _, s := range c.find(func(ex exchange) bool { return before == 0 || ex.Seq < before }) {
		if getMayOmitVersion && s.Method == http.MethodGet && s.SessionID == sid && s.Version == "" {
			continue
		}
		if s.RPC == "initialize" {
			if s.SessionID != "" || s.Status != http.StatusOK {
				t.Errorf("initialize exchange %v on %s", s.exchange, c.Replicas[s.Replica].Name)
			}
			continue
		}
		if s.SessionID != sid || s.Version != version {
			t.Errorf("exchange %v on %s: want session %s and version %s", s.exchange, c.Replicas[s.Replica].Name, sid, version)
		}
	}
}

// checkDeleted checks that sid was DELETEd once, answered 200, and returns
// that exchange.
func (c *cluster) checkDeleted(t *testing.T, sid string) served {
	t.Helper()
	deletes := c.find(func(ex exchange) bool { return ex.Method == http.MethodDelete && ex.SessionID == sid })
	if len(deletes) != 1 || deletes[0].Status != http.StatusOK {
		t.Fatalf("DELETEs of the session: %v, want one answered 200\nwire:\n%s", deletes, c.dump())
	}
	return deletes[0]
}

// requireGoneEverywhere POSTs through the proxy with sid, pinned to each
// replica in turn, and requires every replica to answer 404 with lifeline's
// "Session not found"; then that no replica keeps a session or a stream.
// A concurrent request can take the pinned turn, so each replica is tried
// up to three times until it has answered one of these POSTs itself.
func (c *cluster) requireGoneEverywhere(t *testing.T, sid, version string) {
	t.Helper()
	ctx := testutil.Context(t, wait)
	for i := range c.Replicas {
		for attempt := 1; ; attempt++ {
			id := fmt.Sprintf(`"gone-%d-%d"`, i, attempt)
			c.Proxy.Pin(i)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL,
				strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", version)
			resp, err := c.HTTP.Do(req)
			if err != nil {
				t.Fatalf("POST with the old session: %v", err)
			}
			body := readAll(resp)
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "Session not found") {
				t.Errorf("POST with the old session: %d %s, want 404 Session not found", resp.StatusCode, body)
			}
			if got := c.find(func(ex exchange) bool { return ex.RPCID == id }); len(got) == 1 && got[0].Replica == i {
				break
			}
			if attempt == 3 {
				t.Fatalf("3 POSTs pinned to replica %s went elsewhere\nwire:\n%s", c.Replicas[i].Name, c.dump())
			}
		}
	}
	testutil.Eventually(t, wait, "every replica to let go of the session", func() bool {
		for _, r := range c.Replicas {
			if st := r.H.Stats(); st.Sessions != 0 || st.GetStreams != 0 || st.PostStreams != 0 {
				return false
			}
		}
		return true
	})
}

// readAll reads and closes an answer's body (at most 64 KiB of it).
func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return string(b)
}

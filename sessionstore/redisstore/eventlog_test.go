package redisstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/eventlogtest"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestEventLogConformance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	e := &env{addr: testutil.StartRedis(t)}
	e.raw = newClient(t, e.addr)
	n := 0
	eventlogtest.Run(t, eventlogtest.Harness{
		ExpiryTTL: 300 * time.Millisecond,
		New: func(t *testing.T, opts sessionstore.EventLogOptions) eventlogtest.Instance {
			// Each log gets a prefix of its own on the shared server.
			n++
			p := fmt.Sprintf("conf%d:", n)
			return eventlogtest.Instance{
				Log:  e.store(t, redisstore.Options{Prefix: p}).EventLog(opts),
				Peer: e.store(t, redisstore.Options{Prefix: p}).EventLog(opts),
				Expire: func(t *testing.T, lapsed func() bool) {
					t.Helper()
					holds(t, "the events to lapse", lapsed)
				},
			}
		},
	})
}

func storeEvent(t *testing.T, log *redisstore.EventLog, session, stream, msg string) string {
	t.Helper()
	id, err := log.StoreEvent(t.Context(), session, stream, json.RawMessage(msg))
	if err != nil {
		t.Fatalf("StoreEvent(%s, %s): %v", session, stream, err)
	}
	return id
}

// keys lists the raw keys matching pattern.
func (e *env) keys(t *testing.T, pattern string) []string {
	t.Helper()
	keys, err := e.raw.Keys(t.Context(), pattern).Result()
	if err != nil {
		t.Fatalf("KEYS %s: %v", pattern, err)
	}
	return keys
}

// Every key of a session's log is under the prefix, and PurgeSession
// deletes all of them, leaving another session's alone.
func TestEventLogKeysAndPurge(t *testing.T) {
	e := newEnv(t)
	log := e.store(t, redisstore.Options{}).EventLog(sessionstore.EventLogOptions{})
	for i := range 6 {
		storeEvent(t, log, "a:b", fmt.Sprint("stream-", i%3), "{}")
		storeEvent(t, log, "other", "x", "{}")
	}
	all := e.keys(t, "*")
	for _, k := range all {
		if !strings.HasPrefix(k, prefix+"eventlog:") {
			t.Fatalf("key %q is not under %q", k, prefix+"eventlog:")
		}
	}
	if got := len(e.keys(t, prefix+"eventlog:3:a:b:*")); got != 5 { // hash, sorted set, three streams
		t.Fatalf("session a:b has %d keys (%v), want 5", got, all)
	}
	if err := log.PurgeSession(t.Context(), "a:b"); err != nil {
		t.Fatalf("PurgeSession: %v", err)
	}
	if left := e.keys(t, prefix+"eventlog:3:a:b:*"); len(left) > 0 {
		t.Fatalf("PurgeSession left %v", left)
	}
	if got := len(e.keys(t, prefix+"eventlog:5:other:*")); got != 3 {
		t.Fatalf("the other session has %d keys after the purge, want 3", got)
	}
}

// A stream of one short event, as a POST response's often is, costs Redis
// about what it holds: its key is well under a kilobyte (a Redis stream's
// first node took 4 KiB, so a POST response cost Redis about 4.5 KB
// however small, and a session at its event bound some 45 MB).
func TestEventLogShortStreamCostsWhatItHolds(t *testing.T) {
	e := newEnv(t)
	log := e.store(t, redisstore.Options{}).EventLog(sessionstore.EventLogOptions{})
	for i := range 2 {
		storeEvent(t, log, "s", fmt.Sprint("p", i), `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}
	storeEvent(t, log, "s", "p2", "") // a priming event
	for _, k := range e.keys(t, prefix+"eventlog:1:s:[0-9]*") {
		n, err := e.raw.MemoryUsage(t.Context(), k).Result()
		if err != nil {
			t.Fatalf("MEMORY USAGE %s: %v", k, err)
		}
		if n > 1024 {
			t.Errorf("the key %s of a one-event stream takes %d bytes of Redis, want at most 1024", k, n)
		}
	}
	if got := len(e.keys(t, prefix+"eventlog:1:s:[0-9]*")); got != 3 {
		t.Fatalf("%d stream keys, want 3", got)
	}
}

// Sequence numbers of 15 digits go into ids and elements as digits (Lua
// writes such a number as 1e+14 unless told otherwise, which made two
// events one id and a replay after the first miss the rest).
func TestEventLogSequenceNumbersPast1e14(t *testing.T) {
	e := newEnv(t)
	log := e.store(t, redisstore.Options{}).EventLog(sessionstore.EventLogOptions{})
	storeEvent(t, log, "s", "a", "{}")
	if err := e.raw.HSet(t.Context(), prefix+"eventlog:1:s:m", "seq", 99999999999998).Err(); err != nil {
		t.Fatalf("HSET seq: %v", err)
	}
	var ids []string
	for _, m := range []string{"1", "2", "3"} {
		ids = append(ids, storeEvent(t, log, "s", "a", m))
	}
	if want := "-100000000000000"; !strings.HasSuffix(ids[1], want) {
		t.Fatalf("ids %v: the second's sequence number is not %s", ids, want[1:])
	}
	var got []string
	if _, err := log.ReplayEventsAfter(t.Context(), "s", ids[0], func(id string, msg json.RawMessage) error {
		got = append(got, id+" "+string(msg))
		return nil
	}); err != nil {
		t.Fatalf("ReplayEventsAfter(%s): %v", ids[0], err)
	}
	if want := []string{ids[1] + " 2", ids[2] + " 3"}; !slices.Equal(got, want) {
		t.Fatalf("replayed %q, want %q", got, want)
	}
}

// A replay reads a stream from its newest event back, 64 elements and then
// twice as many each time: it finds the id and returns exactly what
// follows it wherever the id falls (in the first read, at a read's edge,
// at the stream's first event), and an id the stream does not hold (one
// of another stream, interleaved with it) is unknown however deep.
func TestEventLogReplayAcrossReads(t *testing.T) {
	e := newEnv(t)
	log := e.store(t, redisstore.Options{}).EventLog(sessionstore.EventLogOptions{})
	const n = 300 // reads of 64, 128 and 256: elements 236-299, 108-235, 0-107
	var ids, others []string
	for i := range n {
		ids = append(ids, storeEvent(t, log, "s", "long", fmt.Sprint(i)))
		if i%50 == 0 {
			others = append(others, storeEvent(t, log, "s", "other", "x"))
		}
	}
	for _, at := range []int{n - 1, n - 2, n - 64, n - 65, 108, 107, 1, 0} {
		var got []string
		if _, err := log.ReplayEventsAfter(t.Context(), "s", ids[at], func(id string, msg json.RawMessage) error {
			got = append(got, id+" "+string(msg))
			return nil
		}); err != nil {
			t.Fatalf("ReplayEventsAfter(event %d): %v", at, err)
		}
		var want []string
		for i := at + 1; i < n; i++ {
			want = append(want, fmt.Sprint(ids[i], " ", i))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("after event %d: replayed %d events, want %d (first %q)", at, len(got), len(want), got[:min(2, len(got))])
		}
	}
	// Ids of the other stream with the long stream's number: a sequence
	// number the long stream never held, at every depth.
	tag, num, _ := strings.Cut(ids[0], "-")
	num, _, _ = strings.Cut(num, "-")
	for _, o := range others {
		seq := o[strings.LastIndex(o, "-")+1:]
		fake := tag + "-" + num + "-" + seq
		_, err := log.ReplayEventsAfter(t.Context(), "s", fake, func(string, json.RawMessage) error { return nil })
		if !errors.Is(err, sessionstore.ErrUnknownEventID) {
			t.Fatalf("ReplayEventsAfter(%s, a sequence number of another stream): %v, want ErrUnknownEventID", fake, err)
		}
	}
}

// Every key of a session's log carries a TTL, refreshed by StoreEvent: the
// hash and sorted set get the TTL, the streams at least as much.
func TestEventLogTTLs(t *testing.T) {
	e := newEnv(t)
	const ttl = time.Hour
	log := e.store(t, redisstore.Options{}).EventLog(sessionstore.EventLogOptions{TTL: ttl})
	storeEvent(t, log, "s", "A", "1")
	storeEvent(t, log, "s", "B", "2")
	base := prefix + "eventlog:1:s"
	for _, k := range []string{base + ":m", base + ":h"} {
		if d := e.pttl(t, k); d <= ttl-time.Minute || d > ttl {
			t.Fatalf("PTTL %s = %v, want about %v", k, d, ttl)
		}
	}
	for _, k := range []string{base + ":1", base + ":2"} {
		if d := e.pttl(t, k); d < ttl-time.Minute || d > ttl+ttl/4 {
			t.Fatalf("PTTL %s = %v, want between %v and %v", k, d, ttl, ttl+ttl/4)
		}
	}
	// A store refreshes what has lapsed partly.
	if err := e.raw.PExpire(t.Context(), base+":m", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	storeEvent(t, log, "s", "A", "3")
	if d := e.pttl(t, base+":m"); d <= ttl-time.Minute {
		t.Fatalf("PTTL of the hash after a store = %v, want about %v", d, ttl)
	}
}

// The hash of a session's log stays bounded however many streams the
// session opens: a stream whose events were all dropped leaves no field
// and no key.
func TestEventLogManyStreamsBounded(t *testing.T) {
	e := newEnv(t)
	const maxEvents = 20
	log := e.store(t, redisstore.Options{}).EventLog(sessionstore.EventLogOptions{MaxSessionEvents: maxEvents})
	var last string
	for i := range 200 {
		last = storeEvent(t, log, "s", strconv.Itoa(i), "{}")
	}
	base := prefix + "eventlog:1:s"
	if n, err := e.raw.HLen(t.Context(), base+":m").Result(); err != nil || n > 5*maxEvents+6 {
		t.Fatalf("HLEN = %d, %v; want at most %d", n, err, 5*maxEvents+6)
	}
	if keys := e.keys(t, base+":*"); len(keys) != maxEvents+2 {
		t.Fatalf("%d keys, want %d", len(keys), maxEvents+2)
	}
	if _, err := log.ReplayEventsAfter(t.Context(), "s", last, func(string, json.RawMessage) error { return nil }); err != nil {
		t.Fatalf("replay after the last event: %v", err)
	}
}

// A stream key that Redis evicted (a maxmemory policy) leaves counts that
// no longer hold: the log forgets that stream when it comes to drop from
// it, and goes on.
func TestEventLogEvictedStreamKey(t *testing.T) {
	e := newEnv(t)
	log := e.store(t, redisstore.Options{}).EventLog(sessionstore.EventLogOptions{MaxSessionEvents: 3})
	a := storeEvent(t, log, "s", "A", "1")
	storeEvent(t, log, "s", "A", "2")
	b0 := storeEvent(t, log, "s", "B", "3")
	if err := e.raw.Del(t.Context(), prefix+"eventlog:1:s:1").Err(); err != nil {
		t.Fatal(err)
	}
	// A's two events are forgotten, making room for these two.
	b1 := storeEvent(t, log, "s", "B", "4")
	b2 := storeEvent(t, log, "s", "B", "5")
	var got []string
	if _, err := log.ReplayEventsAfter(t.Context(), "s", b0, func(id string, _ json.RawMessage) error {
		got = append(got, id)
		return nil
	}); err != nil || !slices.Equal(got, []string{b1, b2}) {
		t.Fatalf("replay after b0 sent %v, %v; want %v", got, err, []string{b1, b2})
	}
	_, err := log.ReplayEventsAfter(t.Context(), "s", a, func(string, json.RawMessage) error { return nil })
	if !errors.Is(err, sessionstore.ErrUnknownEventID) {
		t.Fatalf("replay after an evicted event: err = %v, want ErrUnknownEventID", err)
	}
	if keys := e.keys(t, prefix+"eventlog:1:s:*"); len(keys) != 3 {
		t.Fatalf("keys %v, want the hash, the sorted set and B's stream", keys)
	}
}

// Stores on two prefixes share nothing: an id of one is unknown to the
// other, even for the same session.
func TestEventLogPrefixesApart(t *testing.T) {
	e := newEnv(t)
	a := e.store(t, redisstore.Options{Prefix: "a:"}).EventLog(sessionstore.EventLogOptions{})
	b := e.store(t, redisstore.Options{Prefix: "b:"}).EventLog(sessionstore.EventLogOptions{})
	id := storeEvent(t, a, "s", "A", "1")
	storeEvent(t, b, "s", "A", "1")
	_, err := b.ReplayEventsAfter(t.Context(), "s", id, func(string, json.RawMessage) error { return nil })
	if !errors.Is(err, sessionstore.ErrUnknownEventID) {
		t.Fatalf("replay on another prefix: err = %v, want ErrUnknownEventID", err)
	}
}

// With Redis hung, every call returns within OpTimeout (the caller's
// context has no deadline) with ErrUnavailable; with Redis stopped too.
func TestEventLogRedisDown(t *testing.T) {
	t.Parallel()
	awaitDialProbers(t)
	srv := testutil.StartRedisServer(t)
	e := &env{addr: srv.Addr(), raw: newClient(t, srv.Addr())}
	log := e.store(t, redisstore.Options{OpTimeout: 300 * time.Millisecond}).EventLog(sessionstore.EventLogOptions{})
	id := storeEvent(t, log, "s", "A", "1")
	calls := map[string]func() error{
		"StoreEvent": func() error { _, err := log.StoreEvent(t.Context(), "s", "A", json.RawMessage("2")); return err },
		"ReplayEventsAfter": func() error {
			_, err := log.ReplayEventsAfter(t.Context(), "s", id, func(string, json.RawMessage) error { return nil })
			return err
		},
		"PurgeSession": func() error { return log.PurgeSession(t.Context(), "s") },
	}
	check := func(state string) {
		for name, call := range calls {
			done := make(chan error, 1)
			go func() { done <- call() }()
			select {
			case err := <-done:
				if !errors.Is(err, redisstore.ErrUnavailable) {
					t.Errorf("%s with Redis %s: err = %v, want ErrUnavailable", name, state, err)
				}
			case <-time.After(wait):
				t.Fatalf("%s with Redis %s did not return within %v", name, state, wait)
			}
		}
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	check("hung")
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	check("stopped")
}

// BenchmarkStoreEvent stores events of 200 bytes and reports the Redis
// server's memory per stored event (INFO used_memory, the 200 bytes
// included): on ten streams of each of 100 sessions (each stream's key
// and hash fields shared by many events), on streams of two events each
// (a POST response's priming event and answer), 100 sessions taking
// turns, and on one long stream.
func BenchmarkStoreEvent(b *testing.B) {
	b.Run("redis-1000streams", func(b *testing.B) {
		var ids [][2]string
		for st := range 10 {
			for s := range 100 {
				ids = append(ids, [2]string{fmt.Sprintf("session-%03d", s), fmt.Sprintf("stream-%02d-00000000-0000-0000-0000", st)})
			}
		}
		benchRedisStore(b, func(i int) [2]string { return ids[i%len(ids)] }, sessionstore.EventLogOptions{}, 100*sessionstore.DefaultMaxSessionEvents)
	})
	b.Run("redis-2-event-streams", func(b *testing.B) {
		benchRedisStore(b, func(i int) [2]string {
			return [2]string{fmt.Sprintf("session-%03d", i/2%100), fmt.Sprintf("p%016x", i/2)}
		}, sessionstore.EventLogOptions{}, 100*sessionstore.DefaultMaxSessionEvents)
	})
	b.Run("redis-responses", func(b *testing.B) {
		benchRedisResponses(b, false)
	})
	b.Run("redis-whole-responses", func(b *testing.B) {
		benchRedisResponses(b, true)
	})
	b.Run("redis-1stream", func(b *testing.B) {
		const most = 1 << 20
		opts := sessionstore.EventLogOptions{MaxStreamEvents: most, MaxSessionEvents: most, MaxStreamBytes: 1 << 30, MaxSessionBytes: 1 << 30}
		benchRedisStore(b, func(int) [2]string { return [2]string{"session", "stream-00000000-0000-0000-0000"} }, opts, most)
	})
}

// benchRedisStore stores b.N events, the i-th on the session and stream
// at(i) gives.
func benchRedisStore(b *testing.B, at func(i int) [2]string, opts sessionstore.EventLogOptions, most int) {
	addr := testutil.StartRedis(b)
	raw := newClient(b, addr)
	store := redisstore.New(newClient(b, addr), redisstore.Options{Prefix: prefix})
	b.Cleanup(func() { store.Close() })
	log := store.EventLog(opts)
	msg := json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"abc","progress":1,"total":10,"message":"` + strings.Repeat("p", 200-97) + `"}}`)
	before := usedMemory(b, raw)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := at(i)
		if _, err := log.StoreEvent(b.Context(), id[0], id[1], msg); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(usedMemory(b, raw)-before)/float64(min(b.N, most)), "redis-B/event")
	// The server's own time per script, apart from the round trip.
	if st, err := raw.Info(b.Context(), "commandstats").Result(); err == nil {
		for line := range strings.Lines(st) {
			if strings.HasPrefix(line, "cmdstat_evalsha") {
				b.Log(strings.TrimSpace(line))
			}
		}
	}
}

// benchRedisResponses stores b.N POST responses of 5 events each (a
// priming event, 3 progress notifications and the answer) in one
// StoreEvents call per response (StoreStream when whole: a response
// written before its record), each on a stream of its own, 100 sessions
// taking turns, and reports the Redis server's own time per call (its
// commandstats for EVALSHA; calls go one at a time, so the time is the
// script's, not a busy machine's). A StoreStream call alone waits a
// millisecond for company, which the time per op counts; redis-server
// idles meanwhile and runs each call colder (every command of the script
// takes 1.5-2x its time in the StoreEvents run), so compare a variant
// with itself across builds, not with the other.
func benchRedisResponses(b *testing.B, whole bool) {
	addr := testutil.StartRedis(b)
	raw := newClient(b, addr)
	store := redisstore.New(newClient(b, addr), redisstore.Options{Prefix: prefix})
	b.Cleanup(func() { store.Close() })
	log := store.EventLog(sessionstore.EventLogOptions{})
	note := json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":3}}`)
	answer := json.RawMessage(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"done"}]}}`)
	msgs := []json.RawMessage{nil, note, note, note, answer}
	if err := raw.ConfigResetStat(b.Context()).Err(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		session, stream := fmt.Sprintf("session-%03d", i%100), fmt.Sprintf("p%016x", i)
		var err error
		if whole {
			err = log.StoreStream(b.Context(), session, stream, msgs)
		} else {
			_, err = log.StoreEvents(b.Context(), session, stream, msgs)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st, err := raw.Info(b.Context(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(st) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:"); ok {
			for f := range strings.SplitSeq(rest, ",") {
				if v, ok := strings.CutPrefix(f, "usec_per_call="); ok {
					if us, err := strconv.ParseFloat(v, 64); err == nil {
						b.ReportMetric(us, "redis-us/call")
					}
				}
			}
		}
	}
}

// usedMemory returns the server's used_memory.
func usedMemory(b *testing.B, raw *redis.Client) int64 {
	b.Helper()
	info, err := raw.Info(b.Context(), "memory").Result()
	if err != nil {
		b.Fatalf("INFO memory: %v", err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatalf("used_memory %q: %v", v, err)
			}
			return n
		}
	}
	b.Fatalf("INFO memory has no used_memory: %q", info)
	return 0
}

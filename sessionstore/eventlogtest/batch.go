package eventlogtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// batchTests are the tests of a log that implements
// sessionstore.EventBatchLog; Run adds them for such a log only.
var batchTests = []struct {
	name string
	f    func(*testing.T, Harness)
}{
	{"BatchMatchesOneByOne", testBatchMatchesOneByOne},
	{"BatchTooLarge", testBatchTooLarge},
}

// batchOf returns the log's StoreEvents, failing the test if it has none.
func batchOf(t *testing.T, log sessionstore.EventLog) sessionstore.EventBatchLog {
	t.Helper()
	b, ok := log.(sessionstore.EventBatchLog)
	if !ok {
		t.Fatalf("%T does not implement sessionstore.EventBatchLog", log)
	}
	return b
}

// A log fed in batches keeps exactly what the reference log, the memory
// log fed the same messages one StoreEvent at a time, keeps: the same
// events replayed after each id, the same ids unknown, under small stream
// and session bounds that drop events all the time. Streams
// interleave as a session's do: one long-lived (a GET stream's) and short
// ones of a few events each (POST responses), some empty events among
// them (priming events, markers).
func testBatchMatchesOneByOne(t *testing.T, h Harness) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { batchMatchesOneByOne(t, h, seed) })
	}
}

func batchMatchesOneByOne(t *testing.T, h Harness, seed uint64) {
	opts := sessionstore.EventLogOptions{MaxStreamEvents: 7, MaxStreamBytes: 60, MaxSessionEvents: 12, MaxSessionBytes: 100}
	batched := batchOf(t, h.New(t, opts).Log)
	single := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{EventLogOptions: opts})
	rng := rand.New(rand.NewPCG(seed, 2026))

	// Message k is the k-th stored, its JSON a string of k padded to a
	// random size; ids[k] and oneIDs[k] are its ids in the two logs.
	var ids, oneIDs []string
	index := map[string]int{} // a batched log's id -> k
	oneIndex := map[string]int{}
	message := func(k int) json.RawMessage {
		if rng.IntN(6) == 0 {
			return json.RawMessage("") // an empty event
		}
		s := fmt.Sprintf(`"%d"`, k)
		return json.RawMessage(s + strings.Repeat(" ", rng.IntN(16)))
	}
	post := 0
	for op := range 160 {
		stream, size := "get", 1+rng.IntN(2)
		if rng.IntN(5) > 0 {
			if rng.IntN(3) > 0 {
				post++ // a new call's stream; else the last one's goes on
			}
			stream, size = fmt.Sprintf("p%d", post), 1+rng.IntN(5)
		}
		batch := make([]json.RawMessage, size)
		for i := range batch {
			batch[i] = message(len(ids) + i)
		}
		got, err := batched.StoreEvents(t.Context(), "s", stream, batch)
		if err != nil || len(got) != len(batch) {
			t.Fatalf("op %d: StoreEvents(%s, %d messages) = %v, %v", op, stream, len(batch), got, err)
		}
		for i, m := range batch {
			index[got[i]] = len(ids)
			ids = append(ids, got[i])
			id := store(t, single, "s", stream, string(m))
			oneIndex[id] = len(oneIDs)
			oneIDs = append(oneIDs, id)
		}
		if op%20 == 19 {
			compareLogs(t, fmt.Sprintf("after op %d", op), batched, single, ids, oneIDs, index, oneIndex)
		}
	}
}

// compareLogs fails the test unless replaying after each message's id
// sends the same messages (by their index) on the same stream in both
// logs, or is unknown in both.
func compareLogs(t *testing.T, when string, a, b sessionstore.EventLog, aIDs, bIDs []string, aIndex, bIndex map[string]int) {
	t.Helper()
	indexes := func(log sessionstore.EventLog, after string, index map[string]int) (string, []int, bool) {
		got, stream, err := replay(t, log, "s", after)
		if errors.Is(err, sessionstore.ErrUnknownEventID) {
			return "", nil, false
		}
		if err != nil {
			t.Fatalf("%s: ReplayEventsAfter(%q): %v", when, after, err)
		}
		out := make([]int, len(got))
		for i, e := range got {
			out[i] = index[e.id]
		}
		return stream, out, true
	}
	known := 0
	for k := range aIDs {
		as, ai, aok := indexes(a, aIDs[k], aIndex)
		bs, bi, bok := indexes(b, bIDs[k], bIndex)
		if aok != bok || as != bs || !slices.Equal(ai, bi) {
			t.Fatalf("%s: after message %d, batched log: known %v, stream %q, %v; one by one: known %v, stream %q, %v",
				when, k, aok, as, ai, bok, bs, bi)
		}
		if aok {
			known++
		}
	}
	if known == 0 || known == len(aIDs) {
		t.Fatalf("%s: %d of %d ids known: the bounds dropped nothing, or everything", when, known, len(aIDs))
	}
}

// A batch with a message larger than a byte bound is refused whole with
// ErrEventTooLarge, and the log goes on.
func testBatchTooLarge(t *testing.T, h Harness) {
	log := batchOf(t, h.New(t, sessionstore.EventLogOptions{MaxStreamBytes: 16}).Log)
	a := store(t, log, "s", "A", `"a"`)
	_, err := log.StoreEvents(t.Context(), "s", "A", []json.RawMessage{json.RawMessage(`"b"`), json.RawMessage(strings.Repeat("z", 17))})
	if !errors.Is(err, sessionstore.ErrEventTooLarge) {
		t.Fatalf("StoreEvents with a message of 17 bytes: err = %v, want ErrEventTooLarge", err)
	}
	wantReplay(t, log, "s", a, "A")
	ids, err := log.StoreEvents(t.Context(), "s", "A", []json.RawMessage{json.RawMessage(`"c"`), json.RawMessage(`"d"`)})
	if err != nil || len(ids) != 2 {
		t.Fatalf("StoreEvents after the refusal: %v, %v", ids, err)
	}
	wantReplay(t, log, "s", a, "A", event{ids[0], `"c"`}, event{ids[1], `"d"`})
}

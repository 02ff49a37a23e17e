package redisstore_test

import (
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
)

// The caller a session is bound to is kept by Create, read back by Get,
// left alone by Update, dropped from the tombstone; a record written
// before the field existed reads as bound to no one.
func TestRecordCaller(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	rec := sessionstore.Record{ID: "s", ProtocolVersion: "2025-06-18", Caller: "digest-a"}
	wantErr(t, "Create", s.Create(t.Context(), rec, time.Minute), nil)
	if got := wantGet(t, s, "s", nil); got.Caller != "digest-a" {
		t.Fatalf("Get Caller = %q, want digest-a", got.Caller)
	}
	wantErr(t, "Update", s.Update(t.Context(), sessionstore.Record{ID: "s", ProtocolVersion: "v2", Caller: "digest-b"}), nil)
	if got := wantGet(t, s, "s", nil); got.Caller != "digest-a" || got.ProtocolVersion != "v2" {
		t.Fatalf("after Update = %+v, want Caller digest-a kept", got)
	}
	wantErr(t, "Terminate", s.Terminate(t.Context(), "s"), nil)
	fields, err := e.raw.HKeys(t.Context(), prefix+"session:s").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if f == "u" {
			t.Fatalf("tombstone fields %q still hold the caller", fields)
		}
	}

	// An old record: the fields of the previous layout, no "u".
	if err := e.raw.HSet(t.Context(), prefix+"session:old", "v", "2025-06-18", "ci", "", "c", "1", "e", "0", "t", "0", "s", "live", "n", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if got := wantGet(t, s, "old", nil); got.Caller != "" || got.ProtocolVersion != "2025-06-18" {
		t.Fatalf("old record = %+v, want no caller", got)
	}
}

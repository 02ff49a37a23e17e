package testutil

import (
	"encoding/json"
	"strconv"
	"strings"
)

// maxNoteSeq bounds the seq a noteBook tracks per tag (the demo's
// lifeline_notify_session sends at most 100,000 per call); a notification
// with a larger seq counts as unexpected.
const maxNoteSeq = 100000

// noteBook checks lifeline_notify_session notifications for loss and
// duplicates: each carries the tag of the call that sent it and its seq
// (0..count-1); a call's result says how many it sent. Guarded by the
// client's mu.
type noteBook struct {
	tags map[string]*tagNotes

	sent, received, missing, dup int64
}

// tagNotes is what one tag's call sent (expected, -1 until its result
// arrived) and how often each seq arrived.
type tagNotes struct {
	expected int
	seen     []uint8 // by seq; saturates at 255
	distinct int     // seqs seen at least once
}

func newNoteBook() noteBook { return noteBook{tags: make(map[string]*tagNotes)} }

func (b *noteBook) tag(tag string) *tagNotes {
	t := b.tags[tag]
	if t == nil {
		t = &tagNotes{expected: -1}
		b.tags[tag] = t
	}
	return t
}

// arrived records one arrival of (tag, seq).
func (b *noteBook) arrived(tag string, seq int) {
	if seq < 0 || seq >= maxNoteSeq {
		return
	}
	t := b.tag(tag)
	if seq >= len(t.seen) {
		t.seen = append(t.seen, make([]uint8, seq+1-len(t.seen))...)
	}
	switch t.seen[seq] {
	case 0:
		t.distinct++
		if t.expected >= 0 && seq < t.expected {
			b.received++
			b.missing--
		}
	default:
		b.dup++
	}
	if t.seen[seq] < 255 {
		t.seen[seq]++
	}
}

// expect records that tag's call sent n notifications, seq 0..n-1.
func (b *noteBook) expect(tag string, n int) {
	t := b.tag(tag)
	if t.expected >= 0 {
		return
	}
	t.expected = min(n, maxNoteSeq)
	got := 0
	for seq := 0; seq < len(t.seen) && seq < t.expected; seq++ {
		if t.seen[seq] > 0 {
			got++
		}
	}
	b.sent += int64(t.expected)
	b.received += int64(got)
	b.missing += int64(t.expected - got)
}

// tally returns the counts: sent, received (distinct, expected), lost
// (sent, not received yet), duplicated, and unexpected (distinct arrivals
// no answered call sent, or past what it said it sent).
func (b *noteBook) tally() (sent, received, lost, dup, unexpected int64) {
	for _, t := range b.tags {
		switch {
		case t.expected < 0:
			unexpected += int64(t.distinct)
		case t.distinct > 0:
			extra := 0
			for seq := t.expected; seq < len(t.seen); seq++ {
				if t.seen[seq] > 0 {
					extra++
				}
			}
			unexpected += int64(extra)
		}
	}
	return b.sent, b.received, b.missing, b.dup, unexpected
}

// notifyData is the data of a lifeline_notify_session notification.
type notifyData struct {
	Logger string `json:"logger"`
	Data   struct {
		Seq *int   `json:"seq"`
		Tag string `json:"tag"`
	} `json:"data"`
}

// taggedNote returns the tag and seq of a lifeline_notify_session
// notification that carries a tag.
func taggedNote(m Message) (tag string, seq int, ok bool) {
	if m.Method != "notifications/message" || len(m.Params) == 0 {
		return "", 0, false
	}
	var d notifyData
	if json.Unmarshal(m.Params, &d) != nil || d.Logger != "lifeline_notify_session" || d.Data.Tag == "" || d.Data.Seq == nil {
		return "", 0, false
	}
	return d.Data.Tag, *d.Data.Seq, true
}

// absent describes up to limit tags with notifications sent and not
// received: "tag: seq seq ...".
func (b *noteBook) absent(limit int) []string {
	var out []string
	for tag, t := range b.tags {
		if t.expected < 0 {
			continue
		}
		var seqs []string
		for seq := range t.expected {
			if seq >= len(t.seen) || t.seen[seq] == 0 {
				seqs = append(seqs, strconv.Itoa(seq))
			}
		}
		if len(seqs) == 0 {
			continue
		}
		out = append(out, tag+": "+strings.Join(seqs, " "))
		if len(out) == limit {
			break
		}
	}
	return out
}

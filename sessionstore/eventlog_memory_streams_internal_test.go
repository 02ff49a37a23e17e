package sessionstore

import (
	"fmt"
	"testing"
)

// A streamSet finds each of its streams by id and by number, removed ones
// no more, in its slice and once it has moved to maps.
func TestStreamSetAcrossItsSliceAndMaps(t *testing.T) {
	var ss streamSet
	var all []*memoryStream
	check := func(when string) {
		t.Helper()
		for _, s := range all {
			if ss.id(s.id) != s || ss.num(s.num) != s {
				t.Fatalf("%s: stream %s (%d) not found", when, s.id, s.num)
			}
		}
	}
	for i := range 3 * smallStreamSet {
		s := &memoryStream{id: fmt.Sprint("s", i), num: uint64(i + 1)}
		ss.add(s)
		all = append(all, s)
		check(fmt.Sprintf("after adding %d", i+1))
		if i == smallStreamSet-1 && ss.byID != nil {
			t.Fatalf("maps made at %d streams", i+1)
		}
	}
	if ss.byID == nil {
		t.Fatalf("no maps at %d streams", len(all))
	}
	for len(all) > 0 {
		gone := all[len(all)/2]
		ss.remove(gone)
		all = append(all[:len(all)/2], all[len(all)/2+1:]...)
		if ss.id(gone.id) != nil || ss.num(gone.num) != nil {
			t.Fatalf("removed stream %s still found", gone.id)
		}
		check("after a removal")
	}
	var small streamSet
	a, b, c := &memoryStream{id: "a", num: 1}, &memoryStream{id: "b", num: 2}, &memoryStream{id: "c", num: 3}
	small.add(a)
	small.add(b)
	small.add(c)
	small.remove(a)
	if small.id("a") != nil || small.id("b") != b || small.num(3) != c || len(small.small) != 2 {
		t.Fatalf("slice set after a removal: %+v", small.small)
	}
}

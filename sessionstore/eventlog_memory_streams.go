package sessionstore

// streamSet is a memory log's streams of one session, found by id and by
// number. Most sessions have a few (the GET stream and a handful of
// request streams): up to smallStreamSet of them sit in a slice, searched
// in order, which costs a session with one stream about half what two
// maps do; past that, two maps.
type streamSet struct {
	small []*memoryStream
	byID  map[string]*memoryStream
	byNum map[uint64]*memoryStream
}

// smallStreamSet is the most streams a streamSet keeps in its slice.
const smallStreamSet = 8

// id returns the stream named id, or nil.
func (ss *streamSet) id(id string) *memoryStream {
	if ss.byID != nil {
		return ss.byID[id]
	}
	for _, s := range ss.small {
		if s.id == id {
			return s
		}
	}
	return nil
}

// num returns the stream numbered num, or nil.
func (ss *streamSet) num(num uint64) *memoryStream {
	if ss.byNum != nil {
		return ss.byNum[num]
	}
	for _, s := range ss.small {
		if s.num == num {
			return s
		}
	}
	return nil
}

// add adds s, which the set does not hold.
func (ss *streamSet) add(s *memoryStream) {
	if ss.byID == nil && len(ss.small) < smallStreamSet {
		ss.small = append(ss.small, s)
		return
	}
	if ss.byID == nil {
		ss.byID = make(map[string]*memoryStream, 2*smallStreamSet)
		ss.byNum = make(map[uint64]*memoryStream, 2*smallStreamSet)
		for _, t := range ss.small {
			ss.byID[t.id], ss.byNum[t.num] = t, t
		}
		ss.small = nil
	}
	ss.byID[s.id], ss.byNum[s.num] = s, s
}

// remove removes s, which the set holds.
func (ss *streamSet) remove(s *memoryStream) {
	if ss.byID != nil {
		delete(ss.byID, s.id)
		delete(ss.byNum, s.num)
		return
	}
	for i, t := range ss.small {
		if t == s {
			last := len(ss.small) - 1
			ss.small[i] = ss.small[last]
			ss.small[last] = nil
			ss.small = ss.small[:last]
			return
		}
	}
}

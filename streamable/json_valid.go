package streamable

import (
	"encoding/binary"
	"math/bits"
)

// maxJSONDepth is how deeply encoding/json lets arrays and objects nest.
const maxJSONDepth = 10000

// validJSON reports whether b is one JSON value with nothing but JSON
// whitespace around it. It answers exactly as encoding/json's Valid does
// (containers nested at most maxJSONDepth deep; in a string, any byte from
// 0x20 up, invalid UTF-8 included), but reads each byte once with no state
// machine behind a function pointer, several times faster: every POSTed
// message is validated before the MCPServer reads it. When top is not nil
// (and zero), b is valid and its top level is an object, top holds that
// object's members as this scan found them, up to maxTopMembers (more set
// top.over), so that reading them takes no second walk; when b is not
// valid, what top holds means nothing.
func validJSON(b []byte, top *topMembers) bool {
	var small [64]byte
	open := small[:0] // the containers open, innermost last: '{' or '['
	i := skipSpace(b, 0)
	rec := top != nil && i < len(b) && b[i] == '{' // the top level's members are recorded
	for {
		// A value begins at i.
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '{', '[':
			if len(open) == maxJSONDepth {
				return false
			}
			kind := b[i]
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == kind+2 { // '}' or ']': empty
				i++
				break
			}
			open = append(open, kind)
			if kind == '{' {
				key := i
				var keyEnd int
				if keyEnd, i = objectKey(b, i); i < 0 {
					return false
				}
				if rec && len(open) == 1 {
					top.add(key, keyEnd, i)
				}
			}
			continue
		case '"':
			i = stringEnd(b, i)
		case 't':
			i = literalEnd(b, i, "true")
		case 'f':
			i = literalEnd(b, i, "false")
		case 'n':
			i = literalEnd(b, i, "null")
		default:
			i = numberEnd(b, i)
		}
		if i < 0 {
			return false
		}
		// A value ended at i: close the containers it ends, then expect
		// the next member or element.
		for {
			if rec && len(open) == 1 {
				top.end(i) // a member's value of the top level
			}
			i = skipSpace(b, i)
			if len(open) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			kind := open[len(open)-1]
			if b[i] == kind+2 {
				open = open[:len(open)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if kind == '{' {
				key := i
				var keyEnd int
				if keyEnd, i = objectKey(b, i); i < 0 {
					return false
				}
				if rec && len(open) == 1 {
					top.add(key, keyEnd, i)
				}
			}
			break
		}
	}
}

// objectKey reads a member's key and its colon starting at i, and returns
// the index just past the key and the index of the value that follows
// (whitespace skipped); value is -1 (and keyEnd 0) when the key or the
// colon is not there.
func objectKey(b []byte, i int) (keyEnd, value int) {
	if i >= len(b) || b[i] != '"' {
		return 0, -1
	}
	if keyEnd = stringEnd(b, i); keyEnd < 0 {
		return 0, -1
	}
	i = skipSpace(b, keyEnd)
	if i >= len(b) || b[i] != ':' {
		return 0, -1
	}
	return keyEnd, skipSpace(b, i+1)
}

// maxTopMembers is how many members of a message's top level validJSON
// records; a message with more (a JSON-RPC message has at most four of
// its own) has its members walked again instead.
const maxTopMembers = 8

// topMembers are the members of a JSON object's top level, in order, as
// validJSON found them: where each key (quoted) and value begin and end.
// over says the object has more than maxTopMembers, and they are not all
// here.
type topMembers struct {
	n    int
	over bool
	m    [maxTopMembers]struct{ key, keyEnd, value, valueEnd int }
}

// add records a member whose value begins at value.
func (t *topMembers) add(key, keyEnd, value int) {
	if t.n == maxTopMembers {
		t.over = true
		return
	}
	t.m[t.n].key, t.m[t.n].keyEnd, t.m[t.n].value = key, keyEnd, value
	t.n++
}

// end records where the value of the member added last ends.
func (t *topMembers) end(i int) {
	if !t.over {
		t.m[t.n-1].valueEnd = i
	}
}

// stringEnd returns the index just past the JSON string that starts at i
// (b[i] is '"'), or -1 when it is not a valid one. It reads eight bytes at
// a time up to the next byte that needs a look of its own (specialBytes).
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		for j+8 <= len(b) {
			if m := specialBytes(binary.LittleEndian.Uint64(b[j:])); m != 0 {
				j += bits.TrailingZeros64(m) / 8
				break
			}
			j += 8
		}
		if j >= len(b) {
			return -1
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c == '\\':
			j++
			if j >= len(b) {
				return -1
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return -1
				}
				for _, h := range b[j+1 : j+5] {
					if !isHexDigit(h) {
						return -1
					}
				}
				j += 4
			default:
				return -1
			}
		case c < 0x20:
			return -1
		}
		j++
	}
}

// Bytes of a word, for specialBytes.
const (
	swarOnes      = 0x0101010101010101 // 1 in every byte
	swarHighBits  = 0x8080808080808080 // each byte's high bit
	swarQuotes    = '"' * swarOnes
	swarBackslash = '\\' * swarOnes
)

// specialBytes marks, in w (eight bytes of a string read as a
// little-endian word), the bytes a string cannot hold as they stand: a
// quote, a backslash or a control character (below 0x20). It is 0 when
// there is none, and otherwise its lowest set bit is the high bit of the
// first such byte (bytes after it may be marked whatever they are). Each
// test is the standard one for a zero byte, x-0x01..01 & ^x with every
// byte's high bit kept, whose first mark is exact (a borrow only reaches
// the bytes above): a quote or backslash is a zero of w xor its
// repetition, a control character a byte below 0x20 (x-0x20..20).
func specialBytes(w uint64) uint64 {
	q, bs := w^swarQuotes, w^swarBackslash
	return ((q-swarOnes)&^q | (bs-swarOnes)&^bs | (w-0x20*swarOnes)&^w) & swarHighBits
}

// numberEnd returns the index just past the JSON number that starts at i,
// or -1 when none does.
func numberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digitsEnd(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || !isDigit(b[i+1]) {
			return -1
		}
		i = digitsEnd(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		i = digitsEnd(b, i)
	}
	return i
}

// literalEnd returns the index just past lit if b holds it at i, or -1.
func literalEnd(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// digitsEnd returns the index of the first byte at or after i that is not
// a decimal digit.
func digitsEnd(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

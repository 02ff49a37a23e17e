package streamable

import "bytes"

// soleMember returns the value of obj's member named name in one walk of
// obj, where that value is what encoding/json would decode into a struct
// field tagged name: obj is a valid JSON value, no key of obj is written
// with escapes, at most one key equals name, and no other key equals it
// but for case (encoding/json matches keys case-insensitively, as
// bytes.EqualFold does, and merges duplicates into one field). value is
// nil when obj has no such member, or is not an object (as a field
// encoding/json could not decode stays empty). ok is false when the walk
// cannot tell, and the caller decodes obj with encoding/json.
func soleMember(obj []byte, name string) (value []byte, ok bool) {
	var v [1][]byte
	ok = soleMembers(obj, []string{name}, v[:])
	return v[0], ok
}

// soleMembers is soleMember for several names in one walk of obj:
// values, all nil on entry, get the value of names[i]'s member in
// values[i] (nil for none). It reports false when the walk cannot tell
// for any of them (and values mean nothing then).
func soleMembers(obj []byte, names []string, values [][]byte) bool {
	obj = bytes.TrimSpace(obj)
	if len(obj) == 0 || obj[0] != '{' {
		return true
	}
	ok := true
	eachMember(obj, func(key, v []byte) bool {
		inner := key[1 : len(key)-1]
		if bytes.IndexByte(inner, '\\') >= 0 {
			ok = false
			return false
		}
		for i, name := range names {
			switch {
			case string(inner) == name:
				if values[i] != nil {
					ok = false // a duplicate: encoding/json merges them
					return false
				}
				values[i] = v
			case mayFold(inner, name) && bytes.EqualFold(inner, []byte(name)):
				ok = false
				return false
			}
		}
		return true
	})
	return ok
}

// mayFold reports whether key may equal name under Unicode case folding
// (bytes.EqualFold): false only when one is empty and the other not, or
// both start with ASCII bytes that differ even ignoring ASCII case (a
// non-ASCII rune may fold to an ASCII one: the long s to s, the Kelvin
// sign to k).
func mayFold(key []byte, name string) bool {
	if len(key) == 0 || len(name) == 0 {
		return len(key) == len(name)
	}
	c, n := asciiLower(key[0]), asciiLower(name[0])
	return c >= 0x80 || n >= 0x80 || c == n
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// soleString is soleMember for a string field: the string obj's member
// name holds, "" when it has none or holds something else (null, or a
// value of another type, which encoding/json leaves the field empty for).
func soleString(obj []byte, name string) (s string, ok bool) {
	v, ok := soleMember(obj, name)
	if !ok {
		return "", false
	}
	return stringValue(v), true
}

// stringValue is the string v, a JSON value, holds, as encoding/json
// decodes it into a string field: "" for none (nil), null or a value of
// another type.
func stringValue(v []byte) string {
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	return string(unquote(v))
}

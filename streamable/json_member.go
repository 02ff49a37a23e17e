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
	obj = bytes.TrimSpace(obj)
	if len(obj) == 0 || obj[0] != '{' {
		return nil, true
	}
	ok = true
	eachMember(obj, func(key, v []byte) bool {
		inner := key[1 : len(key)-1]
		switch {
		case bytes.IndexByte(inner, '\\') >= 0:
			ok = false
		case string(inner) == name:
			if value != nil {
				ok = false // a duplicate: encoding/json merges them
			}
			value = v
		case bytes.EqualFold(inner, []byte(name)):
			ok = false
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	return value, true
}

// soleString is soleMember for a string field: the string obj's member
// name holds, "" when it has none or holds something else (null, or a
// value of another type, which encoding/json leaves the field empty for).
func soleString(obj []byte, name string) (s string, ok bool) {
	v, ok := soleMember(obj, name)
	if !ok || len(v) == 0 || v[0] != '"' {
		return "", ok
	}
	return string(unquote(v)), true
}

package everything

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxRequestStateBytes bounds the requestState a client may echo back: a
// longer one is rejected before it is decoded. Every state this server mints
// is far shorter.
const MaxRequestStateBytes = 4096

// RequestStateTTL is how long a requestState this server minted stays
// valid: a retry that echoes an older one is rejected.
const RequestStateTTL = 10 * time.Minute

// ErrBadRequestState is wrapped by every rejection of an echoed requestState:
// one that is too long, malformed, not signed by this server, minted for
// another tool or prompt, or expired.
var ErrBadRequestState = errors.New("invalid requestState")

// roundState is what a multi round-trip tool or prompt carries from one
// round to the next inside its requestState.
type roundState struct {
	// Owner is the tool or prompt that minted the state; another may not use it.
	Owner string `json:"o"`
	// Round is the number of the round the state was minted in, from 1.
	Round int `json:"r"`
	// Data is what the earlier rounds learnt.
	Data map[string]string `json:"d,omitempty"`
	// Expires is when the state stops being valid, in Unix seconds.
	Expires int64 `json:"e"`
}

// stateSigner mints and checks requestStates: the JSON of a roundState and
// an HMAC-SHA256 of it under a key made when the server is built, so a client
// can neither forge nor alter one, and a state outlives neither its TTL nor
// the server that minted it.
type stateSigner struct {
	key []byte
	now func() time.Time
}

// newStateSigner returns a signer with a fresh random key.
func newStateSigner(now func() time.Time) *stateSigner {
	key := make([]byte, 32)
	// crypto/rand.Read never returns an error (it crashes the program when
	// the system's generator fails).
	_, _ = rand.Read(key)
	return &stateSigner{key: key, now: now}
}

// mint returns the signed requestState that carries st, valid for
// RequestStateTTL from now.
func (s *stateSigner) mint(st roundState) string {
	st.Expires = s.now().Add(RequestStateTTL).Unix()
	payload, err := json.Marshal(st)
	if err != nil {
		// A roundState holds only strings and numbers: it always encodes.
		panic(fmt.Sprintf("everything: encode request state: %v", err))
	}
	body := base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + base64.RawURLEncoding.EncodeToString(s.sum(body))
}

// open checks that state is one this signer minted for owner and has not
// expired, and returns what it carries. Every failure wraps
// ErrBadRequestState.
func (s *stateSigner) open(owner, state string) (roundState, error) {
	if len(state) > MaxRequestStateBytes {
		return roundState{}, fmt.Errorf("%w: %d bytes, more than %d", ErrBadRequestState, len(state), MaxRequestStateBytes)
	}
	body, sig, ok := strings.Cut(state, ".")
	if !ok {
		return roundState{}, fmt.Errorf("%w: not a state this server minted", ErrBadRequestState)
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.sum(body)) {
		return roundState{}, fmt.Errorf("%w: the signature does not match (the state was altered or minted elsewhere)", ErrBadRequestState)
	}
	payload, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return roundState{}, fmt.Errorf("%w: %v", ErrBadRequestState, err)
	}
	var st roundState
	if err := json.Unmarshal(payload, &st); err != nil {
		return roundState{}, fmt.Errorf("%w: %v", ErrBadRequestState, err)
	}
	if st.Owner != owner {
		return roundState{}, fmt.Errorf("%w: minted for %q, not %q", ErrBadRequestState, st.Owner, owner)
	}
	if s.now().Unix() > st.Expires {
		return roundState{}, fmt.Errorf("%w: expired", ErrBadRequestState)
	}
	return st, nil
}

func (s *stateSigner) sum(body string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

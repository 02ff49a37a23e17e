package everything

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStateSigner(t *testing.T) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	s := newStateSigner(func() time.Time { return now })
	state := s.mint(roundState{Owner: "tool", Round: 2, Data: map[string]string{"name": "Alice"}})

	got, err := s.open("tool", state)
	if err != nil || got.Round != 2 || got.Data["name"] != "Alice" {
		t.Fatalf("open: %+v, %v", got, err)
	}

	body, sig, _ := strings.Cut(state, ".")
	for what, bad := range map[string]string{
		"another owner":  "", // checked below with the right state
		"no separator":   body + sig,
		"altered body":   base64.RawURLEncoding.EncodeToString([]byte(`{"o":"tool","r":3,"e":99999999999}`)) + "." + sig,
		"altered sig":    body + "." + base64.RawURLEncoding.EncodeToString([]byte("not the signature")),
		"sig not base64": body + ".!!!",
		"too long":       strings.Repeat("a", MaxRequestStateBytes+1),
	} {
		owner := "tool"
		if bad == "" {
			owner, bad = "other", state
		}
		if _, err := s.open(owner, bad); !errors.Is(err, ErrBadRequestState) {
			t.Errorf("%s: %v, want ErrBadRequestState", what, err)
		}
	}

	// Another signer (another server) does not accept it.
	if _, err := newStateSigner(func() time.Time { return now }).open("tool", state); !errors.Is(err, ErrBadRequestState) {
		t.Errorf("another key: %v", err)
	}

	// It expires after RequestStateTTL.
	now = now.Add(RequestStateTTL)
	if _, err := s.open("tool", state); err != nil {
		t.Errorf("at the TTL: %v", err)
	}
	now = now.Add(time.Second)
	if _, err := s.open("tool", state); !errors.Is(err, ErrBadRequestState) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("after the TTL: %v, want expired", err)
	}
}

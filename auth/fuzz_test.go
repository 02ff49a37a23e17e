package auth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/auth"
)

// FuzzBearerToken sends arbitrary Authorization headers (one or two) through
// RequireBearerToken with a verifier that knows one token, and checks what
// every input must get: the handler reached only with that token (and its
// identity in the context), any refusal a documented status with a
// challenge and a JSON-RPC error body, and no token ever in a log line, an
// answer's header or its body. Longer: go test -run '^$' -fuzz
// '^FuzzBearerToken$' -fuzztime 10m ./auth/
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer good-token", "Bearer bad", "bearer good-token", "Bearer", "Bearer ",
		"Basic dXNlcjpwYXNz", "Bearer good-token extra", "Bearer a\"b", "Bearer " + strings.Repeat("x", 9000),
		"Bearer good-token=", "Bearer ==", "\x00", ""} {
		f.Add(s, "")
	}
	f.Add("Bearer good-token", "Bearer good-token")
	const good = "good-token"
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != good {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "alice", Scopes: []string{"mcp"}, Expiration: time.Now().Add(time.Hour)}, nil
	}
	f.Fuzz(func(t *testing.T, header, second string) {
		var logs bytes.Buffer
		mw := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: metadataURL, Scopes: []string{"mcp"},
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		reached := ""
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached = auth.IdentityFromRequest(r)
			w.WriteHeader(http.StatusOK)
		}))
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{}`))
		if header != "" {
			req.Header["Authorization"] = []string{header}
		}
		if second != "" {
			req.Header["Authorization"] = append(req.Header["Authorization"], second)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		only := len(req.Header["Authorization"]) == 1
		// The scheme is case-insensitive (RFC 9110, section 11.1).
		isGood := len(header) > 7 && strings.EqualFold(header[:7], "Bearer ") && strings.TrimLeft(header[7:], " ") == good
		switch {
		case rec.Code == http.StatusOK:
			if !only || !isGood || reached != "alice" {
				t.Fatalf("Authorization %q %q reached the handler as %q", header, second, reached)
			}
			return
		case rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden:
			if !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer ") {
				t.Fatalf("%d without a Bearer challenge: %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
			}
		case rec.Code == http.StatusBadRequest:
		default:
			t.Fatalf("Authorization %q %q: status %d", header, second, rec.Code)
		}
		if only && header == "Bearer "+good {
			t.Fatalf("the good token was refused: %d %s", rec.Code, rec.Body)
		}
		var e struct {
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == nil || e.Error.Message == "" {
			t.Fatalf("%d: not a JSON-RPC error: %s", rec.Code, rec.Body)
		}
		// A token is written out if it shows up more often than in the
		// answer and log of a request as many Authorization headers as
		// this one, each with an unrelated token (so that a short token
		// found in the refusal's own words, "header" for "eade", counts
		// alike in both).
		var baseLogs bytes.Buffer
		baseMW := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: metadataURL, Scopes: []string{"mcp"},
			Logger: slog.New(slog.NewTextHandler(&baseLogs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		baseReq := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{}`))
		for range max(1, len(req.Header["Authorization"])) {
			baseReq.Header.Add("Authorization", "Bearer q9Q9q9Q9q9")
		}
		base := httptest.NewRecorder()
		baseMW(http.NotFoundHandler()).ServeHTTP(base, baseReq)
		for _, v := range []string{header, second} {
			if len(v) < 7 || !strings.EqualFold(v[:7], "Bearer ") {
				continue
			}
			tok := strings.TrimSpace(v[7:])
			if len(tok) < 4 {
				continue // too short to tell apart from ordinary words
			}
			written := strings.Count(logs.String(), tok) + strings.Count(rec.Body.String(), tok) +
				strings.Count(rec.Header().Get("WWW-Authenticate"), tok)
			ordinary := strings.Count(baseLogs.String(), tok) + strings.Count(base.Body.String(), tok) +
				strings.Count(base.Header().Get("WWW-Authenticate"), tok)
			if written > ordinary {
				t.Fatalf("the token %q was written out (log %q, answer %q %q)", tok, logs.String(), rec.Header().Get("WWW-Authenticate"), rec.Body)
			}
		}
	})
}

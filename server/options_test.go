package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestOptionsReachTheTransport(t *testing.T) {
	srv := newServer(t,
		server.WithDisableStreaming(true),
		server.WithSessionIdManager(fixedIDs{}),
		server.WithStreamableHTTPCORS(mcpserver.WithCORSAllowedOrigins("https://app.example"), mcpserver.WithCORSAllowCredentials()),
		server.WithHTTPContextFunc(func(ctx context.Context, _ *http.Request) context.Context { return ctx }),
	)
	base, _ := serve(t, srv)
	c := rawClient(t, base+"/mcp")
	ctx := testutil.Context(t, wait)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if c.SessionID != "fixed-session-id" {
		t.Fatalf("session id %q, want the manager's", c.SessionID)
	}
	s, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != http.StatusMethodNotAllowed {
		t.Fatalf("GET with streaming disabled: %d", s.Status)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, base+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("CORS preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestWithSessionStore: the transport keeps its sessions in the store
// given, from initialize to DELETE, and leaves the store to its owner:
// Shutdown does not close it.
func TestWithSessionStore(t *testing.T) {
	store := &closeTrackingStore{Store: sessionstore.NewMemory(nil)}
	srv := newServer(t, server.WithSessionStore(store))
	base, served := serve(t, srv)
	c := rawClient(t, base+"/mcp")
	ctx := testutil.Context(t, wait)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, err := store.Get(ctx, c.SessionID); err != nil || rec.ID != c.SessionID {
		t.Fatalf("the store has %+v, %v for the session initialize created, want its record", rec, err)
	}
	del, err := c.Delete(ctx)
	if err != nil || del.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %+v", err, del)
	}
	if _, err := store.Get(ctx, c.SessionID); !errors.Is(err, sessionstore.ErrTerminated) {
		t.Fatalf("the store's record after DELETE: %v, want ErrTerminated", err)
	}

	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := awaitServe(t, served); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	if store.closed.Load() {
		t.Fatal("Shutdown closed the store, which is the caller's")
	}
	if n, err := store.Count(ctx); err != nil || n != 0 {
		t.Fatalf("store.Count after Shutdown = %d, %v; want 0, nil", n, err)
	}
}

// closeTrackingStore is a store with a Close method that records being
// called.
type closeTrackingStore struct {
	sessionstore.Store
	closed atomic.Bool
}

func (s *closeTrackingStore) Close() error {
	s.closed.Store(true)
	return nil
}

type fixedIDs struct{}

func (fixedIDs) Generate() string               { return "fixed-session-id" }
func (fixedIDs) Validate(string) (bool, error)  { return false, nil }
func (fixedIDs) Terminate(string) (bool, error) { return false, nil }

func TestStartServesTLS(t *testing.T) {
	certFile, keyFile, pool := selfSignedCert(t)
	addr := freeAddr(t)
	srv := newServer(t, server.WithTLSCert(certFile, keyFile))
	started := make(chan error, 1)
	go func() { started <- srv.Start(addr) }()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	c := testutil.NewClient("https://" + addr + "/mcp")
	c.HTTP = &http.Client{Transport: tr}
	ctx := testutil.Context(t, wait)
	var err error
	testutil.Eventually(t, wait, "the TLS server to answer initialize", func() bool {
		_, err = c.Initialize(ctx)
		return err == nil
	})
	sctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if err := <-started; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Start returned %v", err)
	}
}

func TestStartRefusesHalfATLSConfig(t *testing.T) {
	srv := newServer(t, server.WithTLSCert("cert.pem", ""))
	if err := srv.Start(freeAddr(t)); err == nil || !strings.Contains(err.Error(), "certificate and a key") {
		t.Fatalf("Start with a cert and no key: %v", err)
	}
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key to files
// and returns them with a pool that trusts the certificate.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "lifeline-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, pool
}

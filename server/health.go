package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Health check bodies. They are fixed JSON objects, so a probe that reads
// them (or a person with curl) sees why a replica is not ready.
const (
	healthReady        = `{"status":"ready"}` + "\n"
	healthNotListening = `{"status":"not listening"}` + "\n"
	healthDraining     = `{"status":"draining"}` + "\n"
	healthAlive        = `{"status":"alive"}` + "\n"
	healthStopped      = `{"status":"stopped"}` + "\n"
	healthNoStore      = `{"status":"store unreachable"}` + "\n"
)

// storeCheckTimeout bounds the readiness check's question to the store.
const storeCheckTimeout = time.Second

// WithHealthPaths makes Start and Serve mount the readiness check
// (ReadinessHandler) at readyPath and the liveness check (LivenessHandler)
// at livePath, beside the MCP endpoint, e.g.
// WithHealthPaths("/readyz", "/livez"). An empty path mounts nothing. Like
// WithEndpointPath, it has no effect when the Server is used as an
// http.Handler or when WithStreamableHTTPServer's server has a Handler of
// its own: mount the handlers on that mux instead.
func WithHealthPaths(readyPath, livePath string) Option {
	return func(s *Server) {
		s.readyPath, s.livePath = healthPath(readyPath), healthPath(livePath)
	}
}

func healthPath(p string) string {
	if strings.Trim(p, "/") == "" {
		return ""
	}
	return "/" + strings.Trim(p, "/")
}

// checkHealthPaths reports health paths that the default mux cannot take:
// one that is the endpoint's or the other check's, or one that is not a
// plain path (ServeMux would read a space as a method or a brace as a
// wildcard, and panic on a bad pattern).
func checkHealthPaths(endpoint, ready, live string) error {
	for _, p := range []string{ready, live} {
		switch {
		case p == "":
		case strings.ContainsAny(p, " \t\r\n{}"):
			return fmt.Errorf("lifeline: WithHealthPaths: %q is not a plain URL path", p)
		case p == endpoint:
			return fmt.Errorf("lifeline: WithHealthPaths: %q is the MCP endpoint's path", p)
		}
	}
	if ready != "" && ready == live {
		return fmt.Errorf("lifeline: WithHealthPaths: readiness and liveness share the path %q", ready)
	}
	return nil
}

// ReadinessHandler returns the readiness check, for a load balancer or a
// Kubernetes readinessProbe. It answers GET and HEAD with 200
// {"status":"ready"} while Start or Serve is serving on a listener and its
// session store answers, and with 503 otherwise: {"status":"not
// listening"} before Start or Serve has its listener (or after it
// returned), {"status":"draining"} from the moment Drain or Shutdown is
// called, for good: through Drain's delay, while the endpoint still serves
// as before, and through Shutdown, while running requests finish;
// {"status":"store unreachable"} while the store does not answer (each
// check asks it one cheap question, streamable.Handler.CheckStore, bounded
// by 1 s; checks that arrive while one is asked wait for its answer, each
// at most as long as its own request lasts, instead of asking again). It involves no MCP and takes no
// lock of the Server's (the store's own, if any, for its one question). A Server that the caller mounts in an http.Server run by the
// caller, rather than through Start or Serve, is never ready: pass that
// http.Server with WithStreamableHTTPServer and call Serve or Start.
func (s *Server) ReadinessHandler() http.Handler { return healthHandler(s.readiness) }

// LivenessHandler returns the liveness check, for a Kubernetes
// livenessProbe. It answers GET and HEAD with 200 {"status":"alive"} until
// Shutdown has returned, draining or not (a draining replica must not be
// restarted), and with 503 {"status":"stopped"} after that. It involves no
// MCP and takes no lock.
func (s *Server) LivenessHandler() http.Handler { return healthHandler(s.liveness) }

func (s *Server) readiness(ctx context.Context) (int, string) {
	switch {
	case s.draining.Load():
		return http.StatusServiceUnavailable, healthDraining
	case s.listening.Load() == 0:
		return http.StatusServiceUnavailable, healthNotListening
	}
	if s.storeCheck.do(ctx, s.handler.CheckStore) != nil {
		return http.StatusServiceUnavailable, healthNoStore
	}
	return http.StatusOK, healthReady
}

func (s *Server) liveness(context.Context) (int, string) {
	if s.stopped.Load() {
		return http.StatusServiceUnavailable, healthStopped
	}
	return http.StatusOK, healthAlive
}

// healthHandler serves a health check whose status and body check gives.
type healthHandler func(ctx context.Context) (status int, body string)

func (check healthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMethodNotAllowed)
		body, _ := json.Marshal(map[string]string{"error": "method " + r.Method + " not allowed: use GET or HEAD"})
		_, _ = w.Write(append(body, '\n'))
		return
	}
	status, body := check(r.Context())
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// Drain starts draining: from now on ReadinessHandler answers 503, so a
// load balancer stops sending new requests here, while everything else
// goes on as before (new requests are still served, streams stay open).
// It then waits delay, the time the load balancer needs to notice, or
// until ctx ends, and returns; call Shutdown next. A Server never stops
// draining. Drain returns an error wrapping ctx's when ctx ended before
// delay had passed.
func (s *Server) Drain(ctx context.Context, delay time.Duration) error {
	s.draining.Store(true)
	if delay <= 0 {
		return nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("lifeline: drain delay cut short: %w", ctx.Err())
	}
}

package streamable

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// checkEdge applies the protections that come before any MCP handling:
// DNS-rebinding protection (a request that reached a loopback listener
// must name a loopback host) and Origin validation (a present Origin must
// be listed in AllowedOrigins, or be local on a loopback listener). It
// returns the failure to answer with, or nil.
func (h *Handler) checkEdge(r *http.Request) *failure {
	// Where the connection arrived is asked last: it is a walk up the
	// request's context.
	if !h.cfg.DisableLocalhostProtection && !isLoopbackHost(r.Host) && arrivedOnLoopback(r) {
		return errForbiddenHost(r.Host)
	}
	origin := headerValue(r.Header, "Origin")
	if origin == "" || h.originAllowed(origin, arrivedOnLoopback(r)) {
		return nil
	}
	return errForbiddenOrigin(origin)
}

// admitRequest checks what every request must pass before its method is
// served (the edge, CORS, shutdown, the era's methods), answering one
// that does not; it reports whether the request goes on. It is not
// inlined, so that ServeHTTP's frame, which an idle GET stream keeps on
// its stack, stays small.
//
//go:noinline
func (h *Handler) admitRequest(w http.ResponseWriter, r *http.Request) bool {
	if f := h.checkEdge(r); f != nil {
		h.refuse(w, r, f)
		return false
	}
	if h.applyCORS(w, r) {
		return false
	}
	if h.isShutting() {
		h.refuseWithID(w, r, errShuttingDown())
		return false
	}
	if r.Method != http.MethodPost && eraOf(r, nil).modern() {
		h.refuse(w, r, errModernMethod())
		return false
	}
	return true
}

// originAllowed reports whether a request from origin may be served: a
// listed origin, or a local page talking to a server on a loopback
// listener. (An origin matching the request's Host proves nothing: a
// rebinding attacker controls both.)
func (h *Handler) originAllowed(origin string, loopbackConn bool) bool {
	if slices.Contains(h.cfg.AllowedOrigins, "*") || slices.Contains(h.cfg.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return loopbackConn && isLoopbackHost(u.Host)
}

// applyCORS adds the CORS response headers (with AllowedOrigins "*" and
// CORSAllowCredentials together, any origin is echoed with credentials
// allowed: use both only for a server that needs no cookie protection) for an allowed cross-origin
// request and answers a preflight. It reports whether the request was a
// preflight and has been answered.
func (h *Handler) applyCORS(w http.ResponseWriter, r *http.Request) bool {
	origin := headerValue(r.Header, "Origin")
	if origin == "" || len(h.cfg.AllowedOrigins) == 0 {
		return false
	}
	if !slices.Contains(h.cfg.AllowedOrigins, "*") && !slices.Contains(h.cfg.AllowedOrigins, origin) {
		return false
	}
	hdr := w.Header()
	hdr.Add("Vary", "Origin")
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version")
	if h.cfg.CORSAllowCredentials {
		hdr.Set("Access-Control-Allow-Credentials", "true")
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	hdr.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
	// The origin is trusted: allow the headers its page asks for (MCP's own,
	// Mcp-Method and Mcp-Name on 2026-07-28, and any of the application's).
	allow := "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name"
	if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
		allow = asked
	}
	hdr.Set("Access-Control-Allow-Headers", allow)
	hdr.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAgeSeconds))
	h.met.answered(causePreflight)
	w.WriteHeader(http.StatusNoContent)
	return true
}

// corsMaxAgeSeconds is how long a browser may cache a preflight answer.
const corsMaxAgeSeconds = 600

// arrivedOnLoopback reports whether the request came in on a loopback
// listener address.
func arrivedOnLoopback(r *http.Request) bool {
	switch addr := r.Context().Value(http.LocalAddrContextKey).(type) {
	case *net.TCPAddr:
		return addr != nil && addr.IP.IsLoopback()
	case net.Addr:
		return addr != nil && isLoopbackHost(addr.String())
	}
	return false
}

// isLoopbackHost reports whether hostport names this machine: "localhost"
// or a loopback IP, with or without a port.
func isLoopbackHost(hostport string) bool {
	return isLocalHostPort(hostport) || parsesAsLoopback(hostport)
}

// isLocalHostPort reports whether hostport is the loopback host a local
// client names most often, with a port: a check cheaper than parsing it.
func isLocalHostPort(hostport string) bool {
	for _, local := range [...]string{"127.0.0.1:", "localhost:"} {
		if port, ok := strings.CutPrefix(hostport, local); ok && port != "" && allDigits(port) {
			return true
		}
	}
	return false
}

// parsesAsLoopback is isLoopbackHost, parsing hostport.
func parsesAsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// allDigits reports whether s is only decimal digits.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

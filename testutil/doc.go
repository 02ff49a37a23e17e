// Package testutil holds what black-box tests of an MCP Streamable HTTP
// server need: a raw MCP HTTP client that speaks the wire protocol (so a
// test sees exactly what a client sees), a stalled reader (a GET whose TCP
// connection is never read), barriers for deterministic races, bounded
// waits, a goroutine-leak check, a throwaway redis-server for tests of
// shared session stores, a round-robin reverse proxy that spreads a
// session's requests over several replicas, and a fault-injecting TCP
// proxy (FaultProxy) that cuts or stalls connections mid-stream, on
// demand, after a given byte or at seeded random points, a rig of
// lifeline-demo replica processes behind that proxy (Replicas: SIGKILL,
// drain, restart, heap and goroutine figures), and a ResumingClient that
// resumes cut streams with Last-Event-ID and counts lost and duplicated
// notifications, for soak and fault tests. It is used by
// lifeline's own tests and is meant for users' tests of their servers
// too.
package testutil

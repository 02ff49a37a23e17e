// Package bench compares lifeline's Streamable HTTP transport with stock
// mcp-go v1.2.1, the official Go SDK v1.8.0, the floor (stock mcp-go's
// MCPServer behind the least HTTP handling possible: the most any transport
// built on it can reach) and a plain net/http handler (the physical limit),
// over loopback in one process, with raw HTTP clients. It reports; it never
// passes or fails. cmd/compare runs it and writes BENCHMARKS.md and
// chart.svg: every throughput cell in interleaved rounds (all variants up at
// once, measured in turn), lifeline also on a real redis-server
// (StartRedis, Options.Redis).
//
// Clients speak the session era (2025-11-25: initialize, Mcp-Session-Id)
// or, on a Peer from InEra(true), protocol 2026-07-28 (sessionless: the
// version in a header and in params._meta, Mcp-Method and Mcp-Name headers,
// subscriptions/listen instead of a GET stream). cmd/compare -modern puts
// lifeline and stock mcp-go side by side in both eras;
// BenchmarkBroadcastAcrossReplicas times broadcasts across three lifeline
// replicas on a real redis-server.
package bench

// Package bench compares lifeline's Streamable HTTP transport with stock
// mcp-go v1.2.1, the official Go SDK v1.8.0, the floor (stock mcp-go's
// MCPServer behind the least HTTP handling possible: the most any transport
// built on it can reach) and a plain net/http handler (the physical limit),
// over loopback in one process, with raw HTTP clients. It reports; it never
// passes or fails. cmd/compare runs it and writes BENCHMARKS.md and
// chart.svg.
package bench

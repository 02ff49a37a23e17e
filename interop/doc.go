// Package interop drives lifeline's Streamable HTTP transport with real MCP
// clients (the official Go SDK client and, through Node, the official
// TypeScript SDK client) and checks what each of them sees. It is a separate
// module so that lifeline itself does not depend on those SDKs; everything
// here lives in its tests.
package interop

// Package interop drives lifeline's Streamable HTTP transport with real MCP
// clients (the official Go SDK client, mcp-go's own client and, through
// Node, the official TypeScript SDK client) and checks what each of them
// sees, against one server and through a round-robin proxy in front of
// three replicas sharing one redis-server. It is a separate module so that
// lifeline itself does not depend on those SDKs; everything here lives in
// its tests.
package interop

// Package lifelineclient is a client transport for mcp-go's client.Client
// that survives a lost session and resumes broken streams.
//
// It wraps mcp-go's own Streamable HTTP client transport
// (transport.StreamableHTTP) and takes its options, so switching is one
// line:
//
//	t, err := transport.NewStreamableHTTP(url, opts...)     // before
//	t, err := lifelineclient.NewStreamableHTTP(url, opts...) // after
//	c := client.NewClient(t)
//
// What it adds:
//
//   - A lost session is replaced. When a request (never a notification,
//     never initialize itself) fails with 404 while the transport held a
//     session id, on a session-era protocol version (before 2026-07-28),
//     the dead session is forgotten, initialize is sent again with the
//     parameters of the first initialize that went through the transport,
//     then notifications/initialized, and the request is retried once on
//     the new session. Re-initializing is singleflight: the calls failing
//     from one lost session share one initialize. A second 404 for the same
//     call, or a failed re-initialize, is returned; nothing loops. A 404
//     with no session held (a stateless server) and any 404 on 2026-07-28
//     are ordinary errors. A GET stream answered 404 on the session it
//     had been open on starts a new session the same way, so a client that
//     only listens recovers too (a GET that never opened may get 404 from a
//     server without the stream, and is left to mcp-go).
//   - After a new session, Config.OnSessionReplaced is called with the old
//     and new ids, notifications/tools/list_changed, resources/list_changed
//     and prompts/list_changed are delivered to the client's notification
//     handler (the server's catalogue may have changed), the standalone GET
//     stream (WithContinuousListening) follows the new session, and the
//     client's handlers for server-to-client requests keep working.
//   - Broken streams are resumed. An SSE response (the GET stream or a
//     request's) that breaks off after an event id is reopened with a GET
//     carrying Last-Event-ID, after the server's retry delay (bounded by
//     Config.Resume, doubled on each failed attempt), and only whole events
//     reach mcp-go's reader, so nothing is lost or doubled against a server
//     that implements resumability. A GET stream the server ends after an
//     event id is resumed the same way. A POST whose request never reached
//     the server (the connection could not be made or written) is sent
//     again once; one that may have reached it returns its error.
package lifelineclient

// Reports which protocol versions the TypeScript SDK client (pinned in
// package.json) knows, and connects to an MCP server on the client's
// defaults to show which one it asks for. Prints one JSON line per step:
//   {"step":"versions","ok":true,"latest":V,"supported":[...]}
//   {"step":"connect","ok":BOOL,"protocolVersion":V,"sessionId":ID}
//   {"step":"done","ok":true}
//
//   node versions.mjs http://127.0.0.1:PORT/mcp
//
// The run is bounded by INTEROP_WAIT_MS (default 15000).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';

const url = process.argv[2];
if (!url) {
  console.error('usage: node versions.mjs URL');
  process.exit(2);
}
const waitMs = Number(process.env.INTEROP_WAIT_MS || 15000);
const guard = setTimeout(() => {
  console.error(`versions.mjs: not done within ${waitMs} ms`);
  process.exit(1);
}, waitMs);

const out = (step, fields) => console.log(JSON.stringify({ step, ...fields }));

out('versions', { ok: true, latest: LATEST_PROTOCOL_VERSION, supported: SUPPORTED_PROTOCOL_VERSIONS });
const client = new Client({ name: 'interop-ts-versions', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(url));
try {
  await client.connect(transport);
  out('connect', { ok: true, protocolVersion: transport.protocolVersion, sessionId: transport.sessionId });
  await transport.terminateSession();
  await client.close();
} catch (err) {
  out('connect', { ok: false, error: String(err) });
}
out('done', { ok: true });
clearTimeout(guard);

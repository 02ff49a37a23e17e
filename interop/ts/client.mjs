// Drives an MCP server over Streamable HTTP with the official TypeScript SDK
// client (@modelcontextprotocol/sdk, pinned in package.json) and prints one
// JSON line per step to stdout: {"step": NAME, "ok": BOOL, ...what it saw}.
// The server must offer the tools of lifeline's interop tests: echo(text),
// interop_notify(text) (one notifications/message to the caller's session)
// and interop_sample(prompt) (a sampling round trip during the call).
//
//   node client.mjs http://127.0.0.1:PORT/mcp
//
// Every wait is bounded by INTEROP_WAIT_MS (default 15000); the whole run by
// four times that. Exit status 0 when every step did what was expected.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const url = process.argv[2];
if (!url) {
  console.error('usage: node client.mjs URL');
  process.exit(2);
}
const WAIT_MS = Number(process.env.INTEROP_WAIT_MS ?? 15000);
const REQ = { timeout: WAIT_MS };
const PROTOCOL_VERSION = '2025-11-25';

let failed = false;
function emit(step, ok, fields = {}) {
  console.log(JSON.stringify({ step, ok, ...fields }));
  if (!ok) failed = true;
}

const watchdog = setTimeout(() => {
  emit('watchdog', false, { error: `run not finished within ${4 * WAIT_MS} ms` });
  process.exit(3);
}, 4 * WAIT_MS);

function errText(e) {
  return e instanceof Error ? e.message : String(e);
}

// step runs fn; its result fields are printed with ok:true, a thrown error
// with ok:false. Returns the fields, or undefined when the step failed.
async function step(name, fn) {
  try {
    const fields = (await fn()) ?? {};
    emit(name, true, fields);
    return fields;
  } catch (e) {
    emit(name, false, { error: errText(e), code: e?.code });
    return undefined;
  }
}

function check(cond, what) {
  if (!cond) throw new Error(what);
}

// expectError runs fn, which must throw, and returns what it threw.
async function expectError(fn) {
  try {
    const got = await fn();
    throw Object.assign(new Error(`expected an error, got ${JSON.stringify(got)}`), { unexpected: true });
  } catch (e) {
    if (e?.unexpected) throw e;
    return { error: errText(e), code: e?.code ?? null };
  }
}

// A client with the handlers the steps observe. state.changed() wakes the
// waiters of until().
function makeClient(name) {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: { sampling: {} } });
  const state = { logs: [], samples: 0, errors: [], pings: new Set(), pongs: 0, waiters: new Set() };
  state.changed = () => {
    for (const w of state.waiters) w();
  };
  client.setNotificationHandler(LoggingMessageNotificationSchema, n => {
    state.logs.push(n.params);
    state.changed();
  });
  client.setRequestHandler(CreateMessageRequestSchema, async req => {
    state.samples++;
    const first = req.params.messages[0];
    const prompt = first?.content?.type === 'text' ? first.content.text : '';
    return { model: 'interop-ts', role: 'assistant', content: { type: 'text', text: `sampled: ${prompt}` } };
  });
  client.onerror = e => {
    state.errors.push(errText(e));
    state.changed();
  };
  return { client, state, name };
}

// transportFor returns a transport that also counts the server's ping
// requests and the client's answers to them once they were POSTed.
function transportFor(c) {
  const t = new StreamableHTTPClientTransport(new URL(url));
  t.onmessage = msg => {
    if (msg.method === 'ping' && msg.id !== undefined) {
      c.state.pings.add(msg.id);
      c.state.changed();
    }
  };
  const send = t.send.bind(t);
  t.send = async (msg, opts) => {
    await send(msg, opts);
    if (msg.result !== undefined && c.state.pings.has(msg.id)) {
      c.state.pongs++;
      c.state.changed();
    }
  };
  return t;
}

// until resolves once cond() holds (checked at each event of c), and fails
// after WAIT_MS.
function until(c, cond, what) {
  return new Promise((resolve, reject) => {
    if (cond()) return resolve();
    const timer = setTimeout(() => {
      c.state.waiters.delete(check);
      reject(new Error(`not within ${WAIT_MS} ms: ${what}`));
    }, WAIT_MS);
    function check() {
      if (cond()) {
        clearTimeout(timer);
        c.state.waiters.delete(check);
        resolve();
      }
    }
    c.state.waiters.add(check);
  });
}

function textOf(result) {
  return (result.content ?? []).filter(c => c.type === 'text').map(c => c.text).join('\n');
}

async function callText(c, name, args) {
  const r = await c.client.callTool({ name, arguments: args }, undefined, REQ);
  const text = textOf(r);
  if (r.isError) throw new Error(`tool ${name} failed: ${text}`);
  return text;
}

async function connect(c, t) {
  await c.client.connect(t, REQ);
  check(t.sessionId, 'no Mcp-Session-Id after connect');
  return { sessionId: t.sessionId, protocolVersion: t.protocolVersion ?? null, server: c.client.getServerVersion()?.name };
}

async function echo(c, text) {
  const got = await callText(c, 'echo', { text });
  check(got === text, `echo returned ${JSON.stringify(got)}`);
  return { text: got };
}

// notify calls interop_notify and waits for the notification it sends.
async function notify(c, text) {
  const result = await callText(c, 'interop_notify', { text });
  await until(c, () => c.state.logs.some(p => p.data?.text === text), `notifications/message carrying ${text}`);
  const p = c.state.logs.find(p => p.data?.text === text);
  return { result, level: p.level, logger: p.logger, data: p.data };
}

async function main() {
  // Session A: the whole life of a session.
  const a = makeClient('interop-ts');
  const ta = transportFor(a);
  const conn = await step('connect', () => connect(a, ta));
  if (!conn) return;
  const sidA = conn.sessionId;

  await step('list_tools', async () => {
    const r = await a.client.listTools(undefined, REQ);
    const tools = r.tools.map(t => t.name);
    for (const want of ['echo', 'interop_notify', 'interop_sample']) check(tools.includes(want), `no tool ${want}`);
    return { tools };
  });
  await step('echo', () => echo(a, 'hello from ts'));
  await step('notify', () => notify(a, 'ts-note'));
  await step('sampling', async () => {
    const text = await callText(a, 'interop_sample', { prompt: 'ts-prompt' });
    check(text === 'model=interop-ts role=assistant text=sampled: ts-prompt', `tool returned ${JSON.stringify(text)}`);
    check(a.state.samples === 1, `sampling handler ran ${a.state.samples} times`);
    return { text, samples: a.state.samples };
  });
  await step('ping', async () => {
    await until(a, () => a.state.pongs > 0, 'a heartbeat ping answered');
    return { pings: a.state.pings.size, pongs: a.state.pongs };
  });
  await step('terminate', async () => {
    await ta.terminateSession();
    return { sessionId: sidA, sessionIdAfter: ta.sessionId ?? null };
  });
  // The transport forgets the id on terminateSession, so the next request
  // carries none.
  await step('after_terminate', () => expectError(() => a.client.listTools(undefined, REQ)));
  await a.client.close();

  // Session B: the server forgets it behind the client's back.
  const b = makeClient('interop-ts-b');
  const tb = transportFor(b);
  const connB = await step('connect_b', () => connect(b, tb));
  if (!connB) return;
  const sidB = connB.sessionId;
  // A notification arrives only on the GET stream, so the stream is open.
  await step('notify_b', () => notify(b, 'ts-note-b'));
  await step('forget', async () => {
    const resp = await fetch(url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': sidB, 'mcp-protocol-version': PROTOCOL_VERSION },
    });
    await resp.body?.cancel();
    check(resp.status === 200, `raw DELETE answered ${resp.status}`);
    return { sessionId: sidB, status: resp.status };
  });
  await step('after_404', async () => {
    const got = await expectError(() => b.client.listTools(undefined, REQ));
    return { ...got, sessionIdKept: tb.sessionId === sidB };
  });
  // The GET stream ended with the session; the transport reconnects it
  // (after about 1 s) and gets 404 too.
  await step('get_reconnect', async () => {
    await until(b, () => b.state.errors.some(e => e.includes('Failed to open SSE stream')), 'the GET reconnect to fail');
    return { errors: b.state.errors };
  });
  await step('after_404_again', async () => {
    const got = await expectError(() => b.client.listTools(undefined, REQ));
    return { ...got, sessionIdKept: tb.sessionId === sidB };
  });
  // The same Client object, closed and connected over a new transport.
  await step('recover_same_client', async () => {
    await b.client.close();
    const tb2 = transportFor(b);
    const got = await connect(b, tb2);
    check(got.sessionId !== sidB, 'the new session reuses the forgotten id');
    await echo(b, 'recovered');
    return got;
  });
  await b.client.close();
  // A new Client and transport.
  await step('recover_new_client', async () => {
    const c = makeClient('interop-ts-c');
    const tc = transportFor(c);
    const got = await connect(c, tc);
    check(got.sessionId !== sidB, 'the new session reuses the forgotten id');
    await echo(c, 'recovered');
    await notify(c, 'ts-note-c');
    await c.client.close();
    return got;
  });
}

try {
  await main();
} catch (e) {
  emit('main', false, { error: errText(e) });
}
emit('done', !failed);
clearTimeout(watchdog);
process.exit(failed ? 1 : 0);

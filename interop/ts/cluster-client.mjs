// Runs one whole MCP conversation over Streamable HTTP with the official
// TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package.json)
// against a URL that may spread requests over several replicas (lifeline's
// cluster interop test puts a round-robin proxy in front of three), and
// prints one JSON line per step to stdout: {"step": NAME, "ok": BOOL, ...}.
// The server must offer the tools of lifeline's interop tests: echo(text),
// interop_notify(text), interop_sample(prompt) (sampling on the call's own
// answer) and interop_sample_on_stream(prompt) (sampling on the session's
// GET stream).
//
//   node cluster-client.mjs http://127.0.0.1:PORT/mcp
//
// Steps: connect (initialize + initialized), get_stream (the transport's
// GET answered 200), list_tools, echo, notify (ROUNDS notifications, each
// waited for; they arrive on the GET stream), sampling (on the call's
// answer), sampling_on_stream (ROUNDS round trips on the GET stream), ping
// (a heartbeat ping answered), terminate (terminateSession: DELETE).
// Several rounds, so that with round-robin some calls are served by another
// replica than the stream's. Every wait is bounded by INTEROP_WAIT_MS
// (default 15000); the whole run by four times that. Exit status 0 when
// every step did what was expected.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const url = process.argv[2];
if (!url) {
  console.error('usage: node cluster-client.mjs URL');
  process.exit(2);
}
const WAIT_MS = Number(process.env.INTEROP_WAIT_MS ?? 15000);
const REQ = { timeout: WAIT_MS };
const ROUNDS = 3;

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

// What the steps observe; changed() wakes the waiters of until().
const state = { logs: [], samples: [], errors: [], http: [], pings: new Set(), pongs: 0, waiters: new Set() };
state.changed = () => {
  for (const w of state.waiters) w();
};

function until(cond, what) {
  return new Promise((resolve, reject) => {
    if (cond()) return resolve();
    const timer = setTimeout(() => {
      state.waiters.delete(check);
      reject(new Error(`not within ${WAIT_MS} ms: ${what}`));
    }, WAIT_MS);
    function check() {
      if (cond()) {
        clearTimeout(timer);
        state.waiters.delete(check);
        resolve();
      }
    }
    state.waiters.add(check);
  });
}

const client = new Client({ name: 'interop-ts-cluster', version: '1.0.0' }, { capabilities: { sampling: {} } });
client.setNotificationHandler(LoggingMessageNotificationSchema, n => {
  state.logs.push(n.params);
  state.changed();
});
client.setRequestHandler(CreateMessageRequestSchema, async req => {
  const first = req.params.messages[0];
  const prompt = first?.content?.type === 'text' ? first.content.text : '';
  state.samples.push(prompt);
  state.changed();
  return { model: 'interop-ts', role: 'assistant', content: { type: 'text', text: `sampled: ${prompt}` } };
});
client.onerror = e => {
  state.errors.push(errText(e));
  state.changed();
};

// The transport's fetch, recording each request's method and answer status
// (the GET stream's included, which the SDK opens on its own).
async function recordingFetch(input, init) {
  const method = init?.method ?? 'GET';
  const resp = await fetch(input, init);
  state.http.push({ method, status: resp.status });
  state.changed();
  return resp;
}

const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
// Counts the server's pings and the client's answers once POSTed.
transport.onmessage = msg => {
  if (msg.method === 'ping' && msg.id !== undefined) {
    state.pings.add(msg.id);
    state.changed();
  }
};
const send = transport.send.bind(transport);
transport.send = async (msg, opts) => {
  await send(msg, opts);
  if (msg.result !== undefined && state.pings.has(msg.id)) {
    state.pongs++;
    state.changed();
  }
};

function textOf(result) {
  return (result.content ?? []).filter(c => c.type === 'text').map(c => c.text).join('\n');
}

async function callText(name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, REQ);
  const text = textOf(r);
  if (r.isError) throw new Error(`tool ${name} failed: ${text}`);
  return text;
}

async function main() {
  const conn = await step('connect', async () => {
    await client.connect(transport, REQ);
    check(transport.sessionId, 'no Mcp-Session-Id after connect');
    return { sessionId: transport.sessionId, protocolVersion: transport.protocolVersion ?? null };
  });
  if (!conn) return;

  // The SDK opens its GET stream once initialized was accepted (202).
  await step('get_stream', async () => {
    await until(() => state.http.some(r => r.method === 'GET' && r.status === 200), 'the GET stream answered 200');
    return { http: state.http };
  });
  await step('list_tools', async () => {
    const r = await client.listTools(undefined, REQ);
    const tools = r.tools.map(t => t.name);
    for (const want of ['echo', 'interop_notify', 'interop_sample', 'interop_sample_on_stream']) {
      check(tools.includes(want), `no tool ${want}`);
    }
    return { tools };
  });
  await step('echo', async () => {
    const got = await callText('echo', { text: 'hello from ts' });
    check(got === 'hello from ts', `echo returned ${JSON.stringify(got)}`);
    return { text: got };
  });
  await step('notify', async () => {
    const texts = [];
    for (let i = 1; i <= ROUNDS; i++) {
      const text = `ts-cluster-note-${i}`;
      const result = await callText('interop_notify', { text });
      check(result === 'notified', `interop_notify returned ${JSON.stringify(result)}`);
      await until(() => state.logs.some(p => p.data?.text === text), `notifications/message carrying ${text}`);
      texts.push(text);
    }
    const p = state.logs[0];
    return { texts, level: p.level, logger: p.logger, received: state.logs.length };
  });
  await step('sampling', async () => {
    const text = await callText('interop_sample', { prompt: 'ts-cluster-prompt' });
    check(text === 'model=interop-ts role=assistant text=sampled: ts-cluster-prompt', `tool returned ${JSON.stringify(text)}`);
    return { text };
  });
  await step('sampling_on_stream', async () => {
    const texts = [];
    for (let i = 1; i <= ROUNDS; i++) {
      const prompt = `ts-cluster-stream-prompt-${i}`;
      const text = await callText('interop_sample_on_stream', { prompt });
      check(text === `model=interop-ts role=assistant text=sampled: ${prompt}`, `tool returned ${JSON.stringify(text)}`);
      texts.push(text);
    }
    return { texts, samples: state.samples };
  });
  await step('ping', async () => {
    await until(() => state.pongs > 0, 'a heartbeat ping answered');
    return { pings: state.pings.size, pongs: state.pongs };
  });
  await step('terminate', async () => {
    const sessionId = transport.sessionId;
    await transport.terminateSession();
    const del = state.http.filter(r => r.method === 'DELETE');
    check(del.length === 1 && del[0].status === 200, `DELETEs answered ${JSON.stringify(del)}`);
    return { sessionId, sessionIdAfter: transport.sessionId ?? null };
  });
}

try {
  await main();
} catch (e) {
  emit('main', false, { error: errText(e) });
}
await client.close();
emit('done', !failed, { errors: state.errors, samples: state.samples.length });
clearTimeout(watchdog);
process.exit(failed ? 1 : 0);

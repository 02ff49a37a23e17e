// Drives lifeline's demo tools with the official TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package.json) while a fault proxy
// cuts its streams (interop/resume_ts_test.go arms the cuts), and prints
// one JSON line per step to stdout: {"step": NAME, "ok": BOOL, ...what the
// client handed the application}. The transport is on its defaults
// (reconnectionOptions: 1 s initial delay, 2 retries; the server's retry
// field wins).
//
//   node resume-client.mjs URL call STEPS DELAY_MS   # lifeline_progress, its POST marked X-Interop-Cut
//   node resume-client.mjs URL get 300x256,50x1      # bursts of lifeline_notify_session (COUNTxBYTES),
//                                                    # on the GET stream, one after the other
//
// Every wait is bounded by INTEROP_WAIT_MS (default 15000); the whole run by
// four times that. Exit status 0 when every step did what was expected.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, mode, ...args] = process.argv.slice(2);
if (!url || !['call', 'get'].includes(mode)) {
  console.error('usage: node resume-client.mjs URL call STEPS DELAY_MS | get COUNTxBYTES,...');
  process.exit(2);
}
const WAIT_MS = Number(process.env.INTEROP_WAIT_MS ?? 15000);
const STEPS = Number(args[0] ?? 10);
const DELAY_MS = Number(args[1] ?? 200);
const BURST = (mode === 'get' ? args[0] ?? '300x256,50x1' : '').split(',').map(b => b.split('x').map(Number));
// The header the test's fault matches: it marks the call's POST, so that
// the proxy cuts that answer and nothing else.
const CUT_HEADER = 'x-interop-cut';

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
    emit(name, true, (await fn()) ?? {});
  } catch (e) {
    emit(name, false, { error: errText(e), code: e?.code });
  }
}

// markingFetch is fetch, with the tools/call POST of lifeline_progress
// marked for the proxy.
async function markingFetch(input, init) {
  if (init?.method === 'POST' && typeof init.body === 'string' && init.body.includes('"lifeline_progress"')) {
    const headers = new Headers(init.headers);
    headers.set(CUT_HEADER, '1');
    init = { ...init, headers };
  }
  return fetch(input, init);
}

// What the client hands the application; errors the transport reports.
const seen = { logs: [], notes: [], errors: [] };
const client = new Client({ name: 'interop-ts-resume', version: '1.0.0' }, { capabilities: {} });
client.setNotificationHandler(LoggingMessageNotificationSchema, n => {
  const data = n.params.data;
  if (typeof data === 'string') seen.logs.push(data);
  else if (data && typeof data === 'object') seen.notes.push([String(data.payload ?? '').length, data.seq]);
});
client.onerror = e => seen.errors.push(errText(e));
const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: markingFetch });

// until resolves once cond() holds, polled every 10 ms, and fails after
// WAIT_MS.
async function until(cond, what) {
  const deadline = Date.now() + WAIT_MS;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not within ${WAIT_MS} ms: ${what}`);
    await new Promise(r => setTimeout(r, 10));
  }
}

function textOf(result) {
  return (result.content ?? []).filter(c => c.type === 'text').map(c => c.text).join('\n');
}

async function main() {
  await step('connect', async () => {
    await client.connect(transport);
    return { sessionId: transport.sessionId, protocolVersion: transport.protocolVersion };
  });
  if (mode === 'call') {
    await step('call', async () => {
      const progress = [];
      const result = await client.callTool(
        { name: 'lifeline_progress', arguments: { steps: STEPS, delay_ms: DELAY_MS } },
        undefined,
        { timeout: WAIT_MS, onprogress: p => progress.push(p.progress) }
      );
      return { result: textOf(result), progress, logs: seen.logs, errors: seen.errors };
    });
  } else {
    let sent = 0;
    for (const [count, bytes] of BURST) {
      await step(`burst_${count}x${bytes}`, async () => {
        const r = await client.callTool(
          { name: 'lifeline_notify_session', arguments: { count, bytes } }, undefined, { timeout: WAIT_MS });
        const text = textOf(r);
        if (text !== `sent ${count} notifications`) throw new Error(`lifeline_notify_session answered ${text}`);
        sent += count;
        // Each notification once: wait until as many distinct ones arrived.
        const distinct = () => new Set(seen.notes.map(n => n.join('/'))).size;
        await until(() => distinct() >= sent, `${sent} distinct notifications`);
        return {};
      });
    }
    emit('received', true, { notes: seen.notes, errors: seen.errors });
  }
  await client.close();
}

try {
  await main();
} catch (e) {
  emit('main', false, { error: errText(e) });
}
emit('done', !failed);
clearTimeout(watchdog);
process.exit(failed ? 1 : 0);

// Goal: random malformed requests to every endpoint family (fast-check) never get a 5xx, always carry x-request-id,
// never stop the agent, are refused when they are writes, and leave the seeded KV, sessions, services, checks and nodes unchanged.
// Then the raw HTTP layer over TCP sockets: malformed request lines and heads and pipelined requests get no hang,
// no crash, no 5xx, and every request read is answered (in order); what uWebSockets.js answers or drops by itself
// is exempted by name.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, startAgent, type Agent, type HttpResult } from '../support/agent.ts';
import { rawExchange } from '../support/raw-http.ts';
import { seeded, type FuzzRequest, headSized } from '../support/fuzz-requests.ts';
import { requests } from '../support/fuzz-families.ts';
import { rawCases, rawAnswerWaitMs, rawDropWatchMs, checkRawExchange } from '../support/fuzz-raw.ts';

/** FUZZ_RUNS=20000 for `npm run fuzz`; 1000 by default so the suite stays quick. */
const numRuns = Number(process.env.FUZZ_RUNS ?? 1000);

let agent: Agent;

// ---------------------------------------------------------------- sending and checking

async function send(r: FuzzRequest): Promise<HttpResult> {
  const body = r.method === 'GET' || r.method === 'HEAD' ? undefined : r.body;
  const res = await fetch(`${agent.url}${r.path}${r.query === '' ? '' : `?${headSized(r.query)}`}`, { method: r.method, headers: r.headers, body });
  const buf = Buffer.from(await res.arrayBuffer());
  const text = buf.toString('utf8');
  return { status: res.status, headers: res.headers, text, body: buf, json: () => JSON.parse(text) };
}

function describeRequest(r: FuzzRequest): string {
  const query = r.query.length > 400 ? `${r.query.slice(0, 400)}… (${r.query.length} chars)` : r.query;
  const body = r.body === undefined ? '(none)' : typeof r.body === 'string' ? JSON.stringify(r.body.length > 300 ? `${r.body.slice(0, 300)}… (${r.body.length} chars)` : r.body) : `${r.body.length} bytes`;
  return `${r.family}: ${r.method} ${r.path.length > 400 ? `${r.path.slice(0, 400)}… (${r.path.length} chars)` : r.path}${query === '' ? '' : `?${query}`} headers=${JSON.stringify(r.headers)} body=${body}`;
}

const alive = () => agent.proc.exitCode === null && agent.proc.signalCode === null;

/** The observable state, without index headers: KV, sessions, agent services and checks, catalog nodes. */
async function snapshot(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const p of ['/v1/kv/?recurse', '/v1/session/list', '/v1/agent/services', '/v1/agent/checks', '/v1/catalog/nodes']) {
    const r = await call(agent.url, 'GET', p);
    out[p] = `${r.status} ${r.text}`;
  }
  return out;
}

let before: Record<string, string>;
let firstStateChange: string | undefined;
const counts = { runs: 0, byFamily: {} as Record<string, number>, byStatus: {} as Record<number, number> };

beforeAll(async () => {
  agent = await startAgent();
  const c = client(agent);
  const ok = async (r: Promise<HttpResult>) => { const x = await r; if (x.status !== 200) throw new Error(`seeding failed: ${x.status} ${x.text}`); };
  seeded.sessionId = await c.session({ Name: 'fuzz-holder' });
  await ok(c.put('/v1/kv/fuzz/a', 'alpha'));
  await ok(c.put('/v1/kv/fuzz/b?flags=3304740253564472344', 'beta'));
  await ok(c.put('/v1/kv/fuzz/sp%20ace%25', ''));
  await ok(c.put(`/v1/kv/fuzz/locked?acquire=${seeded.sessionId}`, 'held'));
  await ok(c.put('/v1/agent/service/register', { Name: 'web', Port: 8080, Tags: ['a'], Check: { TTL: '1h', Status: 'passing' } }));
  await ok(c.put('/v1/agent/check/register', { ID: 'seed-ttl', Name: 'seed ttl', TTL: '1h', Status: 'passing' }));
  before = await snapshot();
});

afterAll(async () => {
  console.log(`fuzz: ${counts.runs} requests; by family ${JSON.stringify(counts.byFamily)}; by status ${JSON.stringify(counts.byStatus)}`);
  if (firstStateChange !== undefined) console.log(`fuzz: first request after which the state differed (before shrinking): ${firstStateChange}`);
  await agent?.stop();
  agent?.cleanup();
});

describe('malformed requests', () => {
  test(`${numRuns} random malformed requests: never 5xx, always x-request-id, agent alive, writes refused, state unchanged`, async () => {
    // Counterexamples print as the short description (bodies and queries can be ~100 KB).
    const described = requests.map((r) => Object.assign(r, { [fc.toStringMethod]: () => describeRequest(r) }));
    await fc.assert(fc.asyncProperty(described, async (r) => {
      const res = await send(r);
      counts.runs++;
      counts.byFamily[r.family] = (counts.byFamily[r.family] ?? 0) + 1;
      counts.byStatus[res.status] = (counts.byStatus[res.status] ?? 0) + 1;
      const answer = `${res.status} ${res.text.slice(0, 500)}`;
      if (res.status >= 500) throw new Error(`5xx for ${describeRequest(r)}\n  → ${answer}`);
      if (!res.headers.get('x-request-id')) throw new Error(`no x-request-id for ${describeRequest(r)}\n  → ${answer}`);
      if (!alive()) throw new Error(`agent died after ${describeRequest(r)}\n${agent.output().slice(-2000)}`);
      if (r.refuse && res.status < 400) throw new Error(`malformed write accepted: ${describeRequest(r)}\n  → ${answer}`);
      if (r.family !== 'read') {
        const now = await snapshot();
        if (JSON.stringify(now) !== JSON.stringify(before)) {
          firstStateChange ??= `${describeRequest(r)} → ${answer}`;
          throw new Error(`state changed after ${describeRequest(r)}\n  → ${answer}`);
        }
      }
    }), { numRuns });
    expect(alive()).toBe(true);
    expect(await snapshot()).toEqual(before);
  }, Math.max(120_000, numRuns * 60));
});

// ---------------------------------------------------------------- the raw HTTP layer

/** FUZZ_RUNS / 4 raw exchanges (each is one TCP connection): 250 in `npm test`, 5,000 in `npm run fuzz`. */
const rawRuns = Math.max(50, Math.floor(numRuns / 4));

describe('the raw HTTP layer', () => {
  test(`${rawRuns} raw exchanges (malformed heads, pipelining): no hang, no crash, no 5xx, every request read answered in order`, async () => {
    const byKind: Record<string, number> = {};
    const described = rawCases.map((c) => Object.assign(c, { [fc.toStringMethod]: () => `${c.kind}: ${c.label} (${c.bytes.length} bytes)` }));
    await fc.assert(fc.asyncProperty(described, async (c) => {
      const r = await rawExchange(agent.url, c.bytes, c.kind === 'uws-drops'
        ? { expect: 1, waitMs: rawDropWatchMs }
        : { expect: Math.max(1, c.ids.length), waitMs: rawAnswerWaitMs });
      byKind[c.kind] = (byKind[c.kind] ?? 0) + 1;
      const wrong = checkRawExchange(c, r);
      if (wrong !== undefined) throw new Error(`${c.kind}: ${c.label}: ${wrong}`);
      if (!alive()) throw new Error(`agent died after ${c.kind}: ${c.label}\n${agent.output().slice(-2000)}`);
    }), { numRuns: rawRuns });
    console.log(`fuzz: ${rawRuns} raw exchanges; by kind ${JSON.stringify(byKind)}`);
    expect(alive()).toBe(true);
    expect(await snapshot()).toEqual(before);
    expect((await call(agent.url, 'GET', '/v1/kv/fuzz/a?raw')).text).toBe('alpha');
  }, Math.max(120_000, rawRuns * 200));
});

/**
 * What bench:memory writes (keys with a value unique to each, sessions) and how it checks, after a restart,
 * that all of it came back: a seeded sample of values, the key count, every session id.
 */
import { mulberry32 } from '../../src/util/prng.ts';
import { describeAnswer, runAll, type Http, type Phase } from './http.ts';
import { valueBytes, type Options } from './options.ts';

const filler = 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(3);

/** The value of key `<prefix>/<i>`: unique per key (so a read proves the right entry came back), ASCII, 100 bytes. */
export function valueOf(prefix: string, i: number): string {
  const head = `${prefix}/${i}:`;
  return head + filler.slice(0, valueBytes - head.length);
}

export interface Verification {
  sampled: number;
  sampleWrong: number;
  keysListed: number;
  sessionsListed: number;
  sessionsMissing: number;
  tailListed: number | undefined;
  tailSampleWrong: number | undefined;
  firstProblem: string | undefined;
}

export const verificationOk = (v: Verification, o: Options, tail: boolean) =>
  v.sampleWrong === 0 && v.keysListed === o.keys && v.sessionsListed === o.sessions && v.sessionsMissing === 0
  && (!tail || (v.tailListed === o.tail && v.tailSampleWrong === 0));

async function listLength(http: Http, path: string): Promise<number> {
  const a = await http.send('GET', path);
  if (a.status === 404) return 0; // an empty prefix answers 404
  if (a.status !== 200) throw new Error(describeAnswer(`GET ${path}`, a));
  return (JSON.parse(a.text) as unknown[]).length;
}

/** Reads back `indices` of `<prefix>/<i>` (raw values) and counts the ones missing or wrong. */
async function checkValues(http: Http, prefix: string, indices: number[], o: Options, stopped: () => boolean, note: (p: string) => void): Promise<number> {
  let wrong = 0;
  await runAll(undefined, indices.length, o.concurrency, async (k) => {
    const i = indices[k]!;
    const a = await http.send('GET', `/v1/kv/${prefix}/${i}?raw`);
    if (a.status !== 200 || a.text !== valueOf(prefix, i)) {
      wrong++;
      note(describeAnswer(`${prefix}/${i}`, a));
    }
  }, stopped);
  return wrong;
}

export async function verify(http: Http, o: Options, sessionIds: readonly string[], tail: boolean, stopped: () => boolean): Promise<Verification> {
  let firstProblem: string | undefined;
  const note = (p: string) => { firstProblem ??= p; };
  const next = mulberry32(o.seed);
  const indices = [0, o.keys - 1, ...Array.from({ length: Math.min(o.sample, o.keys) }, () => Math.floor(next() * o.keys))];
  const sampleWrong = await checkValues(http, 'mem', indices, o, stopped, note);
  const keysListed = await listLength(http, '/v1/kv/mem/?keys');
  if (keysListed !== o.keys) note(`${keysListed} keys listed under mem/, ${o.keys} written`);

  const a = await http.send('GET', '/v1/session/list');
  if (a.status !== 200) throw new Error(describeAnswer('session list', a));
  const listed = new Set((JSON.parse(a.text) as { ID: string }[]).map((s) => s.ID));
  const sessionsMissing = sessionIds.filter((id) => !listed.has(id)).length;
  if (sessionsMissing > 0) note(`${sessionsMissing} created sessions missing from the list`);

  let tailListed: number | undefined;
  let tailSampleWrong: number | undefined;
  if (tail) {
    tailListed = await listLength(http, '/v1/kv/memtail/?keys');
    if (tailListed !== o.tail) note(`${tailListed} keys listed under memtail/, ${o.tail} written`);
    const tailIndices = Array.from({ length: Math.min(o.sample, o.tail) }, () => Math.floor(next() * o.tail));
    tailSampleWrong = await checkValues(http, 'memtail', tailIndices, o, stopped, note);
  }
  return { sampled: indices.length, sampleWrong, keysListed, sessionsListed: listed.size, sessionsMissing, tailListed, tailSampleWrong, firstProblem };
}

export async function loadKeys(http: Http, prefix: string, total: number, o: Options, stopped: () => boolean, label: string | undefined): Promise<Phase> {
  return runAll(label, total, o.concurrency, async (i) => {
    const a = await http.send('PUT', `/v1/kv/${prefix}/${i}`, valueOf(prefix, i));
    if (a.status !== 200 || a.text.trim() !== 'true') throw new Error(describeAnswer(`PUT ${prefix}/${i}`, a));
  }, stopped);
}

export async function loadSessions(http: Http, o: Options, stopped: () => boolean, ids: string[]): Promise<Phase> {
  const body = JSON.stringify({ TTL: '24h', LockDelay: '0s' });
  return runAll('sessions', o.sessions, o.concurrency, async () => {
    const a = await http.send('PUT', '/v1/session/create', body, true);
    if (a.status !== 200) throw new Error(describeAnswer('session create', a));
    const id = (JSON.parse(a.text) as { ID?: unknown }).ID;
    if (typeof id !== 'string' || id === '') throw new Error(describeAnswer('session create returned no ID', a));
    ids.push(id);
  }, stopped);
}

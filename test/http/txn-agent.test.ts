// Goal: transactions on a started agent (the process users run, over its WAL): the npm consul client's
// transaction.create in the consul dialect, and a transaction's writes, locks and deletes survive a SIGKILL and
// a restart over the same data dir (the entry replays to the same state and indexes).
import Consul from 'consul';
import { afterAll, expect, test } from 'vitest';
import { call, startAgent, type Agent } from '../support/agent.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const started: Agent[] = [];
afterAll(async () => {
  for (const a of started) await a.stop();
  started[0]?.cleanup();
});

test('a transaction through the npm client survives SIGKILL and replays to the same entries', async () => {
  const first = await startAgent({ args: ['--dialect', 'consul'] });
  started.push(first);
  const consul: any = new Consul({ host: '127.0.0.1', port: Number(new URL(first.url).port) } as any);
  const s = (await consul.session.create({ ttl: '60s' })).ID;
  await consul.kv.set({ key: 'app/gone', value: 'x' });
  const out = await consul.transaction.create([
    { KV: { Verb: 'set', Key: 'app/config', Value: b64('v1'), Flags: 7 } },
    { KV: { Verb: 'lock', Key: 'app/leader', Value: b64('me'), Session: s } },
    { KV: { Verb: 'delete', Key: 'app/gone' } },
  ]);
  expect(out.Results.map((r: any) => r.KV.Key)).toEqual(['app/config', 'app/leader']);
  const before = (await call(first.url, 'GET', '/v1/kv/app/?recurse')).text;
  await first.kill9();

  const second = await startAgent({ dataDir: first.dataDir, args: ['--dialect', 'consul'] });
  started.push(second);
  const after = await call(second.url, 'GET', '/v1/kv/app/?recurse');
  expect(after.text).toBe(before);
  expect(after.json().map((e: any) => [e.Key, e.Session ?? null, e.LockIndex])).toEqual([['app/config', null, 0], ['app/leader', s, 1]]);
});

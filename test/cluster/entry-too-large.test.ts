// Goal: a write larger than one entry of the cluster's log holds (the nats-servers' max_payload, 1 MiB by
// default) is refused 413 naming both sizes, in the seed dialect's format, and stores nothing, when the
// agent's kv_max_value_size lets such a value through; it was an internal error (500) with a stack trace.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { call, startAgent, tempDataDir } from '../support/agent.ts';
import { useSuiteNats } from '../support/jetstream.ts';

const suite = useSuiteNats(1);

test('a value past the nats-servers\' max_payload: 413, code 1011, nothing stored', async () => {
  const dir = tempDataDir();
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ limits: { kv_max_value_size: 3 * 1024 * 1024 } }));
  const agent = await startAgent({ args: ['--nats', suite.nats.urls.join(','), '--replicas', '1', '--config-file', config] });
  try {
    const r = await call(agent.url, 'PUT', '/v1/kv/big', Buffer.alloc(1_500_000, 0x61));
    expect(r.status).toBe(413);
    const body = r.json();
    expect(body).toMatchObject({ code: 1011, details: { max: expect.any(Number), size: expect.any(Number) } });
    expect(body.details.size).toBeGreaterThan(body.details.max);
    expect(body.message).toMatch(/above the \d+ bytes one log entry holds \(in a cluster, the nats-servers' max_payload\)/);
    expect((await call(agent.url, 'GET', '/v1/kv/big')).status).toBe(404);
    expect((await call(agent.url, 'PUT', '/v1/kv/small', 'fits')).status).toBe(200);
    expect(agent.output()).not.toMatch(/RangeError/);
  } finally {
    await agent.stop();
    agent.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);

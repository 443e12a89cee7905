// Goal: blocking queries on a large list woken by one write cannot hold one rendered answer each at once.
// Woken together, every query rendered its answer before any was sent: 600 queries on a session list of
// 10 MB took an agent past 4 GB and out of heap. A started agent whose heap is limited to 192 MB, with 150
// queries on a 5 MB session list, now answers each (200, or 503 past the budget of answer bytes) and keeps
// serving; the old wake-up ran it out of memory.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const sessions = 1_500;
const nameChars = 3_000;
const queries = 150;

let agent: Agent;
let dir: string;

beforeAll(async () => {
  dir = tempDataDir();
  const config = join(dir, 'config.json');
  // A budget of answer bytes held well under the heap: what answers may hold is not what this test is about.
  writeFileSync(config, JSON.stringify({ limits: { http_answer_bytes_max: 16 * 1024 * 1024 } }));
  agent = await startAgent({ args: ['--config-file', config], env: { NODE_OPTIONS: '--max-old-space-size=192' }, readyTimeoutMs: 40_000 });
  const name = 'n'.repeat(nameChars);
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < sessions) {
      next += 1;
      const r = await client(agent).put('/v1/session/create', { Name: name });
      expect(r.status).toBe(200);
    }
  }));
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
});

test(`${queries} blocking queries on a ${sessions}-session list woken by one write: each answered, the agent alive`, async () => {
  const list = await client(agent).get('/v1/session/list');
  expect(list.body.length).toBeGreaterThan(sessions * nameChars);
  const index = list.headers.get('x-consul-index');
  const waiting = Array.from({ length: queries }, () => call(agent.url, 'GET', `/v1/session/list?index=${index}&wait=60s`));
  // Let every query reach its wait before the write that wakes them all.
  await new Promise((r) => setTimeout(r, 1_500));
  expect((await client(agent).put('/v1/session/create', { Name: 'wake' })).status).toBe(200);
  const answers = await Promise.all(waiting);
  const statuses = answers.map((a) => a.status);
  expect(statuses.every((s) => s === 200 || s === 503), `statuses ${[...new Set(statuses)].join(', ')}`).toBe(true);
  expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
  for (const a of answers) if (a.status === 200) expect(a.json()).toHaveLength(sessions + 1);
  expect(agent.proc.exitCode).toBeNull();
  expect((await client(agent).get('/v1/status/leader')).status).toBe(200);
}, 120_000);

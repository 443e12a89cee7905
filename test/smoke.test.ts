// Goal: the simplest end-to-end path works — start, create a session, take a lock, stop cleanly with exit 0.
import { test, expect } from 'vitest';
import { startAgent, client } from './support/agent.ts';
test('smoke', async () => {
  const a = await startAgent();
  const c = client(a);
  const id = await c.session();
  expect((await c.put(`/v1/kv/k?acquire=${id}`, 'v')).text).toBe('true');
  expect(await a.stop()).toBe(0);
  a.cleanup();
});

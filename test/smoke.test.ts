import { test, expect } from 'vitest';
import { startAgent, client } from './test/support/agent.ts';
test('smoke', async () => {
  const a = await startAgent();
  const c = client(a);
  const id = await c.session();
  expect((await c.put(`/v1/kv/k?acquire=${id}`, 'v')).text).toBe('true');
  expect(await a.stop()).toBe(0);
  a.cleanup();
});

/**
 * One agent for the enclosing suite with `keys` values under `big/` (big/00, big/01, …) and the limits of
 * large answers given, and a list of raw sockets the suite holds open: they are destroyed, then the agent
 * stopped and its data removed, after the suite's tests.
 */
import { writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { client, startAgent, tempDataDir, type Agent } from './agent.ts';

export interface BigPrefix {
  agent: Agent;
  /** Sockets to destroy after the suite. */
  held: Socket[];
}

export function useBigPrefixAgent(o: { keys: number; value: string | Buffer; limits: Record<string, unknown> }): BigPrefix {
  const handle: BigPrefix = { agent: undefined as unknown as Agent, held: [] };
  beforeAll(async () => {
    const configFile = join(tempDataDir(), 'agent.json');
    writeFileSync(configFile, JSON.stringify({ limits: o.limits }));
    handle.agent = await startAgent({ args: ['--config-file', configFile] });
    const c = client(handle.agent);
    for (let i = 0; i < o.keys; i++) expect((await c.put(`/v1/kv/big/${String(i).padStart(2, '0')}`, o.value)).status).toBe(200);
  });
  afterAll(async () => {
    for (const s of handle.held) s.destroy();
    await handle.agent?.stop();
    handle.agent?.cleanup();
  });
  return handle;
}

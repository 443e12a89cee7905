/**
 * One agent for the enclosing suite, started with a config file the tests may rewrite (and reload): made
 * before the suite's tests, the agent stopped and the file's directory removed after them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startAgent, type Agent, type AgentOptions } from './agent.ts';

export interface ConfigAgent {
  agent: Agent;
  /** The config file's path. */
  file: string;
  /** A scratch directory of the suite's, holding the file; removed after the suite. */
  dir: string;
  /** Writes the config file (an object as JSON, a string as it is). */
  write(config: unknown): void;
}

/** The handle's fields are set once the suite's beforeAll has run. */
export function useConfigAgent(prefix: string, config: unknown, o: AgentOptions = {}): ConfigAgent {
  const handle = {} as ConfigAgent;
  beforeAll(async () => {
    handle.dir = mkdtempSync(join(tmpdir(), prefix));
    handle.file = join(handle.dir, 'config.json');
    handle.write = (c) => writeFileSync(handle.file, typeof c === 'string' ? c : JSON.stringify(c));
    handle.write(config);
    handle.agent = await startAgent({ ...o, args: ['--config-file', handle.file, ...(o.args ?? [])] });
  }, 30_000);
  afterAll(async () => {
    if (handle.agent?.proc.exitCode === null) await handle.agent.stop();
    handle.agent?.cleanup();
    if (handle.dir !== undefined) rmSync(handle.dir, { recursive: true, force: true });
  });
  return handle;
}

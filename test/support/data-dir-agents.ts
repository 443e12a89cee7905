/**
 * Agents a test file starts on data dirs of its own: each is ended after its test (SIGKILL, or a clean
 * stop) and its data dir removed. Also the large values that make a snapshot file travel beside the log.
 */
import { rmSync } from 'node:fs';
import { afterEach } from 'vitest';
import { startAgent, tempDataDir, type Agent } from './agent.ts';

export function dataDirAgents(end: 'kill9' | 'stop') {
  const started: Agent[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const a of started.splice(0)) await (end === 'kill9' ? a.kill9() : a.stop());
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return {
    /** A new data dir path, removed after the test (the agent makes it). */
    dataDir(): string {
      const dir = tempDataDir();
      dirs.push(dir);
      return dir;
    },
    /** An agent started on `dataDir`, ended after the test; rejects as startAgent does. */
    async agentOn(dataDir: string): Promise<Agent> {
      const agent = await startAgent({ dataDir });
      started.push(agent);
      return agent;
    },
  };
}

/** Keys whose values together take more than the 256 KiB a restore entry carries inline. */
export const largeKeys = Array.from({ length: 80 }, (_, k) => `big/${k}`);
export const largeValueOf = (key: string) => `${key}:`.padEnd(4_000, 'v');

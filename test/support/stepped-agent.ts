/**
 * An agent whose wall clock a test steps while it runs, as an NTP step does: libfaketime reads the offset
 * from a file on every call (`+0`, `-1h`, `+1h`), and leaves the monotonic clock alone.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgent, type Agent } from './agent.ts';

export const libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

export interface SteppedAgent {
  agent: Agent;
  /** Sets the agent's wall clock to the true time plus `offset` (libfaketime's syntax: `+0`, `-1h`, `+90m`). */
  step(offset: string): void;
  stop(): Promise<void>;
}

/** Starts an agent under libfaketime at `offset` (the true time by default), with `config` as its configuration file. */
export async function startSteppedAgent(config: Record<string, unknown> = {}, offset = '+0', args: string[] = []): Promise<SteppedAgent> {
  if (!existsSync(libfaketime)) throw new Error(`this test needs libfaketime at ${libfaketime} (Debian: apt-get install -y faketime)`);
  const dir = mkdtempSync(join(tmpdir(), 'roster-stepped-'));
  const offsetFile = join(dir, 'offset');
  const configFile = join(dir, 'config.json');
  writeFileSync(offsetFile, offset);
  writeFileSync(configFile, JSON.stringify(config));
  let agent: Agent;
  try {
    agent = await startAgent({
      args: ['--config-file', configFile, ...args],
      env: { LD_PRELOAD: libfaketime, FAKETIME_TIMESTAMP_FILE: offsetFile, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' },
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    agent,
    step: (to) => writeFileSync(offsetFile, to),
    stop: async () => {
      await agent.stop();
      agent.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

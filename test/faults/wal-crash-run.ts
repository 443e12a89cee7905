/**
 * What each crash-safety fault file of the embedded log sets up alike: the seed and rounds of the run
 * (printed, so a failure can be replayed), data dirs under one temporary work dir, and the agents
 * started on them, all killed after each test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';
import { startAgent, type Agent } from '../support/agent.ts';
import { faultRounds, faultSeed, logLines, Rng } from './wal-crash-support.ts';

export interface FaultRun {
  seed: number;
  rounds: number;
  /** The stream every test draws its faults from, each through its own child. */
  root: Rng;
  /** Per-test budget: a fixed part plus a part per round, so a soak with more rounds gets the time it needs. */
  budgetMs(fixedMs: number, perRoundMs: number, n?: number): number;
  /** A fresh data dir under the run's work dir (not created: the agent creates it). */
  dataDir(): string;
  /** Starts an agent on `dir`, killed after the test. */
  start(dir: string, args?: string[]): Promise<Agent>;
  /** Kills `agent` after the test too (one started without `start`). */
  track(agent: Agent): void;
}

/** Draws the seed and rounds for the fault file `file`, prints them, and registers the cleanup hooks. */
export function faultRun(file: string): FaultRun {
  const seed = faultSeed();
  const rounds = faultRounds(8);
  console.log(`[wal-crash] seed=${seed} rounds=${rounds} (replay: ROSTER_FAULT_SEED=${seed} ROSTER_FAULT_ROUNDS=${rounds} npx vitest run ${file})`);
  const work = mkdtempSync(join(tmpdir(), 'roster-wal-crash-'));
  const agents: Agent[] = [];
  afterEach(async () => {
    for (const a of agents.splice(0)) await a.kill9();
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  let dirs = 0;
  return {
    seed,
    rounds,
    root: new Rng(seed),
    budgetMs: (fixedMs, perRoundMs, n = rounds) => fixedMs + perRoundMs * n,
    dataDir: () => join(work, `d${++dirs}`),
    start: async (dir, args = []) => {
      const agent = await startAgent({ dataDir: dir, args });
      agents.push(agent);
      return agent;
    },
    track: (agent) => void agents.push(agent),
  };
}

/** Torn tails the agent's recovery reported cutting (a real kill may leave one). */
export const tornTailsIn = (agent: Agent): number => logLines(agent.output()).filter((l) => /truncated a torn last commit/.test(l.msg ?? '')).length;

/** A value of `n` padding bytes after a readable tag, so commits vary in size and cross pages. */
export const valueOf = (tag: string, n: number): string => `${tag}|${'x'.repeat(n)}`;

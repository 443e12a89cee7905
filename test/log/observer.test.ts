// Goal: both logs report each of their group commits to a LogObserver — one call per commit, with the
// commit's entries (so the batch-size histogram sums to the entries appended) and a duration — whether the
// observer is given as an option or later with observe(); the runtime reports appends and applied batches.
import { silentLogger } from '../../src/ports/logger.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { JetStreamLog } from '../../cluster/index.ts';
import { startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { ManualClock, SystemClock } from '../../src/ports/clock.ts';
import type { Proposal, ReplicatedLog } from '../../src/ports/log.ts';
import type { LogObserver, RuntimeObserver } from '../../src/ports/observer.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { MemoryLog, WalLog } from '../../src/wal/index.ts';

const proposals = (from: number, count: number): Proposal[] => Array.from({ length: count }, (_, k) => ({
  pid: `p-${from + k}`,
  cmd: { t: 'kv.set', key: `k${from + k}`, value: null, flags: '0' },
}));

class Recorder implements LogObserver {
  readonly commits: { entries: number; seconds: number }[] = [];
  committed(entries: number, seconds: number): void {
    this.commits.push({ entries, seconds });
  }
}

/** Appends 1 + 3 + 2 entries in one tick (they may share commits), then 4 alone; checks what was reported. */
async function exercise(log: ReplicatedLog & { stats: { commits: number; entries: number } }, rec: Recorder): Promise<void> {
  await log.open();
  log.subscribe(0, () => undefined);
  await Promise.all([log.append(proposals(1, 1)), log.append(proposals(2, 3)), log.append(proposals(5, 2))]);
  await log.append(proposals(7, 4));
  expect(rec.commits.reduce((n, c) => n + c.entries, 0)).toBe(10);
  expect(rec.commits.length).toBe(log.stats.commits);
  expect(rec.commits.at(-1)!.entries).toBe(4);
  for (const c of rec.commits) {
    expect(c.entries).toBeGreaterThanOrEqual(1);
    expect(c.seconds).toBeGreaterThanOrEqual(0);
    expect(c.seconds).toBeLessThan(30);
  }
  await log.close();
}

describe('WalLog', () => {
  let dir: string;
  beforeAll(async () => { dir = await mkdtemp(join(tmpdir(), 'roster-observer-')); });
  afterAll(async () => { await rm(dir, { recursive: true, force: true }); });

  test('reports every commit to the observer given as an option', async () => {
    const rec = new Recorder();
    await exercise(new WalLog({ dir: join(dir, 'a'), clock: new ManualClock(), observer: rec }), rec);
  });

  test('reports every commit to an observer set with observe()', async () => {
    const rec = new Recorder();
    const log = new WalLog({ dir: join(dir, 'b'), clock: new ManualClock() });
    log.observe(rec);
    await exercise(log, rec);
  });
});

describe('JetStreamLog', () => {
  let nats: NatsCluster;
  beforeAll(async () => { nats = await startNatsServer(); });
  afterAll(async () => { await nats?.shutdown(); });

  test('reports every commit of this node, publish until PubAck', async () => {
    const rec = new Recorder();
    const log = new JetStreamLog({ servers: nats.urls, stream: `OBS${process.pid}`, replicas: 1, nodeName: 'n1', clock: new SystemClock() });
    log.observe(rec);
    await exercise(log, rec);
  });
});

describe('Runtime', () => {
  test('reports each append once acknowledged and each applied batch with its size', async () => {
    const appends: number[] = [];
    const applies: { entries: number; seconds: number }[] = [];
    const observer: RuntimeObserver = {
      appended: (s) => appends.push(s),
      applied: (entries, seconds) => applies.push({ entries, seconds }),
    };
    const clock = new ManualClock();
    const quiet = silentLogger;
    const runtime = new Runtime({ log: new MemoryLog({ clock }), clock, logger: quiet, nodeName: 'n1', nodeId: 'id', address: '127.0.0.1', observer });
    await runtime.start();
    const before = { appends: appends.length, entries: applies.reduce((n, a) => n + a.entries, 0) };
    await runtime.propose({ t: 'kv.set', key: 'a', value: null, flags: '0' });
    await Promise.all(runtime.proposeAll([{ t: 'kv.set', key: 'b', value: null, flags: '0' }, { t: 'kv.set', key: 'c', value: null, flags: '0' }]));
    expect(appends.length - before.appends).toBe(2);
    expect(applies.reduce((n, a) => n + a.entries, 0) - before.entries).toBe(3);
    expect(applies.every((a) => a.seconds >= 0 && a.entries >= 1)).toBe(true);
    await runtime.stop();
  });
});

// Goal: a crash while the log is written afresh (its current segment cut short while it ran, afresh.ts) never
// leaves a data dir the agent refuses once the snapshot of the acknowledged state is on disk. The WAL runs in
// this process over an agent's data dir, applying its entries to a real registry state; the data dir is
// copied at every sync of the afresh steps (what a crash right after it leaves), and an agent started on
// each copy serves every acknowledged write. A copy from before the snapshot holds what the cut left, and
// is refused (exit 2) as the cut itself is, never started without the writes the cut lost.
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { ManualClock } from '../../src/ports/clock.ts';
import { apply, fromSnapshotData, RegistryState, toSnapshotData } from '../../src/state/index.ts';
import { WalLog } from '../../src/wal/index.ts';
import { call } from '../support/agent.ts';
import { dataDirAgents } from '../support/data-dir-agents.ts';
import { exitCodeOf } from '../faults/wal-crash-support.ts';
import { fileHandlePrototype } from '../log/wal-fixture.ts';

// Registered first, so it runs after the agents on the copies are ended (afterEach hooks run last first).
const copies: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const d of copies.splice(0)) rmSync(d, { recursive: true, force: true });
});
const { dataDir: newDataDir, agentOn } = dataDirAgents('kill9');

const keys = Array.from({ length: 20 }, (_, k) => `afresh/${k}`);
const snapName = (index: number) => `${String(index).padStart(20, '0')}.snap`;

/** The files of wal/ and snap/ with their sizes: two copies alike hold the same state for a start. */
function layout(dir: string): string {
  return ['wal', 'snap'].flatMap((sub) => (existsSync(join(dir, sub)) ? readdirSync(join(dir, sub)).sort() : [])
    .map((name) => `${sub}/${name}:${statSync(join(dir, sub, name)).size}`)).join(' ');
}

describe('a crash while the log is written afresh', () => {
  test('a copy at every step from the snapshot on starts with every acknowledged write; one before it is refused', { timeout: 120_000 }, async () => {
    const dataDir = newDataDir();
    const first = await agentOn(dataDir);
    for (const key of keys) expect((await call(first.url, 'PUT', `/v1/kv/${key}`, key)).text).toBe('true');
    await first.kill9();

    // The runtime's part, in this process: the state applied from the log, and snapshots of it.
    const clock = new ManualClock();
    const log = new WalLog({ dir: dataDir, clock, dirCheckMs: 1000 });
    const opened = await log.open();
    const state = opened === undefined ? new RegistryState() : fromSnapshotData(opened.data);
    log.subscribe(state.index, (batch) => { for (const e of batch) apply(state, e); });
    log.snapshotSource(() => ({ index: state.index, data: toSnapshotData(state) }));
    const last = state.index;
    const writable: boolean[] = [];
    log.onWritable((w) => void writable.push(w));

    // The data dir after each sync while the log is written afresh.
    const states = new Map<string, string>();
    const proto = await fileHandlePrototype() as unknown as { sync: (this: unknown) => Promise<void> };
    const sync = proto.sync;
    vi.spyOn(proto, 'sync').mockImplementation(async function (this: unknown) {
      await sync.call(this);
      const seen = layout(dataDir);
      if (states.has(seen)) return;
      const copy = mkdtempSync(join(tmpdir(), 'roster-afresh-'));
      copies.push(copy);
      cpSync(dataDir, copy, { recursive: true });
      states.set(seen, copy);
    });
    const [segment] = readdirSync(join(dataDir, 'wal')).filter((n) => n.endsWith('.seg'));
    truncateSync(join(dataDir, 'wal', segment!), 0);
    clock.advance(1000);
    await vi.waitFor(() => expect(writable).toEqual([false]), { timeout: 5_000 });
    clock.advance(1000);
    await vi.waitFor(() => expect(writable).toEqual([false, true]), { timeout: 5_000 });
    vi.restoreAllMocks();
    await log.close();

    const withSnapshot = [...states].filter(([seen]) => seen.includes(`snap/${snapName(last)}:`));
    expect(withSnapshot.length, [...states.keys()].join('\n')).toBeGreaterThanOrEqual(2);
    for (const [seen, copy] of states) {
      if (!seen.includes(`snap/${snapName(last)}:`)) {
        const err: unknown = await agentOn(copy).then(() => undefined, (e: unknown) => e);
        expect(exitCodeOf(err), `${seen}: ${String(err)}`).toBe(2);
        continue;
      }
      const agent = await agentOn(copy).catch((err: unknown) => { throw new Error(`${seen}: ${String(err)}`); });
      const missing: string[] = [];
      for (const key of keys) if ((await call(agent.url, 'GET', `/v1/kv/${key}?raw`)).text !== key) missing.push(key);
      expect(missing, seen).toEqual([]);
      await agent.kill9();
    }
  });
});

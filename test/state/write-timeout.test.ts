// Goal: a proposal not confirmed within the write timeout is answered with the timed-out error (outcome
// unknown) at that time, not before and not much after; one confirmed in time is answered as usual; a
// confirmation that comes after the timeout changes nothing; and nothing is checked while nothing waits.
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/ports/clock.ts';
import { isWriteTimedOut } from '../../src/ports/log-errors.ts';
import type { Proposal, ReplicatedLog } from '../../src/ports/log.ts';
import { Proposals } from '../../src/runtime/proposals.ts';
import type { Command } from '../../src/domain/commands.ts';

/** A log whose appends settle only when the test says so. */
function heldLog() {
  const appends: { proposals: readonly Proposal[]; resolve: () => void }[] = [];
  const log = {
    append: (proposals: readonly Proposal[]) => new Promise<void>((resolve) => appends.push({ proposals, resolve })),
  } as unknown as ReplicatedLog;
  return { log, appends };
}

const flush = async () => { for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r)); };
const cmd = { t: 'kv.set', key: 'a', value: 'v', flags: '0' } as unknown as Command;

describe('write timeout', () => {
  test('a write never confirmed is given up on at its timeout, outcome unknown', async () => {
    const clock = new ManualClock();
    const { log } = heldLog();
    const proposals = new Proposals(log, undefined, clock, 2_000);
    let settled: unknown;
    void proposals.submit([cmd])[0]!.then((r) => { settled = r; }, (err: unknown) => { settled = err; });
    clock.advance(1_999);
    await flush();
    expect([settled, proposals.size]).toEqual([undefined, 1]);
    clock.advance(500);
    await flush();
    expect(isWriteTimedOut(settled)).toBe(true);
    expect((settled as { timeoutMs: number }).timeoutMs).toBe(2_000);
    expect(proposals.size).toBe(0);
  });

  test('a write confirmed in time is answered; one confirmed late changes nothing; the oldest go first', async () => {
    const clock = new ManualClock();
    const { log, appends } = heldLog();
    const proposals = new Proposals(log, undefined, clock, 2_000);
    const outcomes: string[] = [];
    const track = (name: string, p: Promise<unknown>) => p.then(() => outcomes.push(`${name} ok`), (err: unknown) => outcomes.push(`${name} ${isWriteTimedOut(err) ? 'timed out' : String(err)}`));
    void track('first', proposals.submit([cmd])[0]!);
    clock.advance(1_000);
    void track('second', proposals.submit([cmd])[0]!);
    // The second is confirmed (appended and applied here) in time; the first never is.
    proposals.applied(appends[1]!.proposals[0]!.pid, 7, { ok: true });
    appends[1]!.resolve();
    await flush();
    clock.advance(1_500);
    await flush();
    expect(outcomes).toEqual(['second ok', 'first timed out']);
    // The first's confirmation, late: nothing to answer any more, nothing thrown.
    proposals.applied(appends[0]!.proposals[0]!.pid, 6, { ok: true });
    appends[0]!.resolve();
    await flush();
    expect([outcomes.length, proposals.size]).toEqual([2, 0]);
  });

  test('the check runs only while writes wait, and stops with the runtime', async () => {
    const clock = new ManualClock();
    const { log, appends } = heldLog();
    const proposals = new Proposals(log, undefined, clock, 2_000);
    const timers = () => (clock as unknown as { timers: Map<number, unknown> }).timers.size;
    expect(timers()).toBe(0);
    const answer = proposals.submit([cmd, cmd]);
    expect(timers()).toBe(1);
    for (const p of appends[0]!.proposals) proposals.applied(p.pid, 1, { ok: true });
    appends[0]!.resolve();
    await Promise.all(answer);
    clock.advance(500);
    expect(timers()).toBe(0);
    void proposals.submit([cmd])[0]!.catch(() => {});
    proposals.stop();
    expect(timers()).toBe(0);
  });
});

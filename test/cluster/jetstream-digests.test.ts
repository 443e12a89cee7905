// Goal: nodes that read different copies of the stream find out. Each node digests the message ids it reads per
// window of sequences (aligned, so every node's windows match; a node that opened mid-window starts at the next),
// reports its newest digests with its progress, and on hearing a different digest for a window it read checks
// each of its messages there against the stream's leader once: the node whose reads the leader does not hold
// diverges (exit code 70 in the agent), the one that agrees goes on. Without a server.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/ports/logger.ts';
import { DivergenceAudit } from '../../cluster/jetstream/audit.ts';
import { StreamDigests, windowsReported, type WindowDigest } from '../../cluster/jetstream/digests.ts';
import { decodeProgress, encodeProgress } from '../../cluster/jetstream/progress.ts';

/** A node's digests over windows of 8 sequences; records the mismatches it was told and the windows it checked. */
function node(cursorSeq = 0, asked: () => Promise<boolean> = () => Promise.resolve(true)) {
  const mismatches: { end: number; node: string }[] = [];
  const verified: [number, string][][] = [];
  const digests = new StreamDigests({
    verify: (reads) => { verified.push([...reads]); return asked(); },
    mismatch: (w, other) => void mismatches.push({ end: w.end, node: other }),
  }, cursorSeq, 8);
  const readAll = (from: number, to: number, idAt: (seq: number) => string = (seq) => `n.boot.${seq}`): void => {
    for (let seq = from; seq <= to; seq++) digests.read(seq, idAt(seq));
  };
  return { digests, mismatches, verified, readAll };
}

describe('window digests', () => {
  it('nodes that read the same messages report the same digests, windows aligned on sequences', () => {
    const a = node();
    const b = node();
    a.readAll(1, 20);
    b.readAll(1, 20);
    expect(a.digests.latest().map((d) => d.end)).toEqual([16, 8]);
    expect(b.digests.latest()).toEqual(a.digests.latest());
    // A node that opened from a snapshot at seq 5 digests from the window starting at 9: same digest for 16.
    const late = node(5);
    late.readAll(6, 20);
    expect(late.digests.latest()).toEqual([a.digests.latest()[0]]);
    a.digests.heardFrom('late', late.digests.latest());
    late.digests.heardFrom('a', a.digests.latest());
    expect([...a.mismatches, ...late.mismatches]).toEqual([]);
  });

  it('a window read differently is checked against the leader once, from either side and in either order', () => {
    const good = node();
    const bad = node();
    good.readAll(1, 16);
    // The bad copy held another message at seq 11.
    bad.readAll(1, 16, (seq) => (seq === 11 ? 'm.old.7' : `n.boot.${seq}`));
    bad.digests.heardFrom('good', good.digests.latest());
    expect(bad.mismatches).toEqual([{ end: 16, node: 'good' }]);
    expect(bad.verified).toHaveLength(1);
    expect(bad.verified[0]!.find(([seq]) => seq === 11)).toEqual([11, 'm.old.7']);
    // Heard again (every report carries the newest windows): not checked again.
    bad.digests.heardFrom('good', good.digests.latest());
    expect(bad.verified).toHaveLength(1);
    // A digest heard before this node completed the window is compared when it does.
    const slow = node();
    slow.readAll(1, 12);
    slow.digests.heardFrom('bad', bad.digests.latest());
    expect(slow.verified).toHaveLength(0);
    slow.readAll(13, 16);
    expect(slow.mismatches).toEqual([{ end: 16, node: 'bad' }]);
    expect(slow.verified).toHaveLength(1);
  });

  it('a check that could not ask the leader runs again on the next report', async () => {
    const answers = [false, true];
    const n = node(0, () => Promise.resolve(answers.shift() ?? true));
    n.readAll(1, 8);
    const other: WindowDigest[] = [{ end: 8, sha: '0123456789abcdef' }];
    n.digests.heardFrom('x', other);
    await Promise.resolve();
    await Promise.resolve();
    n.digests.heardFrom('y', other);
    expect(n.verified).toHaveLength(2);
    n.digests.heardFrom('z', other);
    expect(n.verified).toHaveLength(2);
  });

  it('progress reports carry the newest digests; malformed ones are dropped', () => {
    const digests: WindowDigest[] = [{ end: 2048, sha: '00112233445566ff' }, { end: 1024, sha: 'ffeeddccbbaa9988' }];
    const back = decodeProgress(encodeProgress('n1', { server: 's1', appliedIndex: 7, digests }));
    expect(back?.digests).toEqual(digests);
    const raw = (dg: unknown) => decodeProgress(new TextEncoder().encode(JSON.stringify({ name: 'n1', server: 's', applied: 1, dg })));
    expect(raw([[1024, 'XYZ']])?.digests).toBeUndefined();
    expect(raw([[0, '00112233445566ff']])?.digests).toBeUndefined();
    expect(raw(Array.from({ length: windowsReported + 1 }, (_, k) => [1024 * (k + 1), '00112233445566ff']))?.digests).toBeUndefined();
    expect(raw([[1024, '00112233445566ff']])?.appliedIndex).toBe(1);
  });
});

describe('the check against the leader', () => {
  function auditOver(stored: Map<number, string>, failing = false) {
    const diverged: Error[] = [];
    let stopped = false;
    const audit = new DivergenceAudit({
      stream: 'LOG', logger: silentLogger, ownIdPrefix: 'me.boot.',
      storedId: (seq) => (failing ? Promise.reject(new Error('timeout')) : Promise.resolve(stored.get(seq))),
      stopped: () => stopped, diverged: (err) => { diverged.push(err); stopped = true; },
    });
    return { audit, diverged };
  }

  it('the node whose reads the leader holds goes on; the other diverges, naming the sequence', async () => {
    const leader = new Map([[9, 'n.boot.9'], [10, 'n.boot.10'], [11, 'n.boot.11']]);
    const good = auditOver(leader);
    expect(await good.audit.verify([[9, 'n.boot.9'], [10, 'n.boot.10'], [11, 'n.boot.11']])).toBe(true);
    expect(good.diverged).toEqual([]);
    const bad = auditOver(leader);
    expect(await bad.audit.verify([[9, 'n.boot.9'], [10, 'n.boot.10'], [11, 'm.old.7']])).toBe(true);
    expect(bad.diverged.map((e) => e.message)).toEqual([expect.stringMatching(/seq 11 was read as commit m\.old\.7 and now holds commit n\.boot\.11/)]);
  });

  it('a leader that cannot be asked leaves the check to be made again', async () => {
    const { audit, diverged } = auditOver(new Map(), true);
    expect(await audit.verify([[1, 'x']])).toBe(false);
    expect(diverged).toEqual([]);
  });
});

// Goal: the WAL removes an attachment (a large restore's snapshot file beside the log) only once no start
// could replay an entry naming it: every entry naming it is at or below the fallback snapshot (the older of
// the two kept). However many restores follow, without log snapshots between them, a reopen (as after a
// crash) finds every attachment its replay needs; an attachment stored for an entry not yet committed is
// kept; one no entry names (its append never committed) goes at the next open.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { WalLog } from '../../src/wal/index.ts';
import { WalFixture } from './wal-fixture.ts';

const fx = WalFixture.use();
const { opened, reopen } = fx;

/** A file as large as a restore stores beside the log, distinct for each `k`. */
function fileOf(k: number): { bytes: Buffer; sha256: string } {
  const bytes = Buffer.alloc(300_000, `snapshot ${k};`);
  return { bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
}

const attachmentsOf = (): string[] => {
  const dir = join(fx.dir, 'attachments');
  return existsSync(dir) ? readdirSync(dir).sort() : [];
};

/** Stores file `k` as an attachment and appends the restore entry naming it; resolves with the file's name. */
async function restore(log: WalLog, k: number): Promise<string> {
  const { bytes, sha256 } = fileOf(k);
  const name = await log.storeAttachment(bytes, sha256);
  await log.append([{ pid: `n1-restore-${k}`, cmd: { t: 'state.restore', attachment: { name, sha256 } } }]);
  return name;
}

/** Appends a plain entry; resolves with the log's last index. */
async function write(log: WalLog, key: string): Promise<number> {
  await log.append([{ pid: `n1-${key}`, cmd: { t: 'kv.set', key, value: null, flags: '0' } }]);
  return log.lastIndex();
}

describe('WAL attachments', () => {
  test('five restores with no snapshot between them: every attachment stays, and a reopen replays all five', async () => {
    const log = await opened();
    const names: string[] = [];
    for (let k = 1; k <= 5; k += 1) {
      names.push(await restore(log, k));
      await write(log, `after/${k}`);
    }
    expect(attachmentsOf()).toEqual([...names].sort());
    await log.close();

    const again = await reopen();
    expect(again.snapIndex).toBe(0);
    const restores = again.entries.filter((e) => e.cmd.t === 'state.restore');
    expect(restores).toHaveLength(5);
    for (const e of restores) {
      const named = (e.cmd as { attachment: { name: string; sha256: string } }).attachment;
      expect(createHash('sha256').update(again.log.loadAttachment(named.name)).digest('hex')).toBe(named.sha256);
    }
    expect(attachmentsOf()).toEqual([...names].sort());
  });

  test('an attachment goes once the fallback snapshot is past its entry, not when only the newest is', async () => {
    const log = await opened();
    const early = await restore(log, 1);
    const late = await restore(log, 2);
    const first = await write(log, 'a');
    await log.saveSnapshot({ index: first, data: {} });
    // The newest snapshot holds both restores, but a start falling back from it would replay them.
    expect(attachmentsOf()).toEqual([early, late].sort());
    const kept = await restore(log, 3);
    const second = await write(log, 'b');
    await log.saveSnapshot({ index: second, data: {} });
    // The fallback (at `first`) holds restores 1 and 2; restore 3 lies after it.
    expect(attachmentsOf()).toEqual([kept]);
    await log.close();

    const again = await reopen();
    expect(again.snapIndex).toBe(second);
    expect(attachmentsOf()).toEqual([kept]);
    await write(again.log, 'c');
    await again.log.saveSnapshot({ index: again.log.lastIndex(), data: {} });
    expect(attachmentsOf()).toEqual([]);
  });

  test('one stored for an entry not committed yet is kept; one no entry names goes at the next open', async () => {
    const log = await opened();
    const { bytes, sha256 } = fileOf(1);
    const waiting = await log.storeAttachment(bytes, sha256);
    // A snapshot saved meanwhile (the entry is not in the log yet) leaves it.
    await log.saveSnapshot({ index: await write(log, 'a'), data: {} });
    await log.saveSnapshot({ index: await write(log, 'b'), data: {} });
    expect(attachmentsOf()).toEqual([waiting]);
    await log.close();

    // Its entry never committed (the append refused, or a crash before it): nothing needs it.
    const stray = `${'0'.repeat(64)}.bin`;
    await writeFile(join(fx.dir, 'attachments', stray), 'left by hand');
    await reopen();
    expect(attachmentsOf()).toEqual([]);
  });
});

// Goal: a log whose end was cut while it was closed is refused, from what the WAL always leaves on disk:
// at least 512 KiB of zeros past the current segment's last commit, a sealed segment (its zeros cut) only
// once the next one is on disk. A file cut at or inside a commit, a sealed segment left last (the one after
// it removed), an empty segment after a sealed one: each refused naming the file and what it lost, the data
// dir untouched; the advice it gives, followed, opens the log.
import { execSync } from 'node:child_process';
import { readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { frameOffsets, pad, proposals, usedBytes, WalFixture } from './wal-fixture.ts';

describe('WalLog recovery refuses a log whose end was cut', () => {
  const fx = WalFixture.use();
  const { reopen, seed, segments, expectRefused } = fx;

  /** Runs the shell commands of the refusal's advice that follow `after` (up to the next `;` or the end). */
  function follow(message: string, after: string): void {
    const at = message.indexOf(after);
    expect(at, message).toBeGreaterThan(-1);
    execSync(message.slice(at + after.length).split(/;|$/)[0]!.trim());
  }

  it('refuses the last segment cut at a commit boundary; the advice, followed, opens it without the commits cut', async () => {
    await seed(6);
    const [seg] = await segments();
    const buf = await readFile(seg!);
    const fourth = frameOffsets(buf)[3]!;
    await truncate(seg!, fourth);
    const message = await expectRefused(new RegExp(`the last segment ${seg} ends at offset ${fourth}, right after its last commit \\(index 3\\), with no zeros after it.*entries acknowledged after index 3 may be lost`));
    follow(message, 'with zeros after it: ');
    const { entries } = await reopen();
    expect(entries.map((e) => e.index)).toEqual([1, 2, 3]);
  });

  it('refuses the last segment cut inside a commit (a file ending before the length its header gives)', async () => {
    await seed(6);
    const [seg] = await segments();
    const buf = await readFile(seg!);
    const fourth = frameOffsets(buf)[3]!;
    await truncate(seg!, fourth + 20);
    await expectRefused(new RegExp(`${seg} ends inside a commit at offset ${fourth} \\(entries from index 4\\), before the end its header gives`));
  });

  it('refuses zeros cut to fewer than the WAL keeps, though every commit is there', async () => {
    await seed(3);
    const [seg] = await segments();
    const used = usedBytes(await readFile(seg!));
    await truncate(seg!, used + 4096);
    await expectRefused(/ends 4096 bytes of zeros after its last commit/);
  });

  it('refuses a sealed segment left last (the one after it removed)', async () => {
    await seed(4, { segmentBytesMax: 1 });
    const segs = await segments();
    expect(segs).toHaveLength(4);
    await rm(segs[3]!);
    await expectRefused(new RegExp(`the last segment ${segs[2]} ends at offset \\d+, right after its last commit \\(index 3\\), with no zeros after it`));
  });

  it('refuses an emptied last segment after a sealed one; the advice, followed, opens the log without its entries', async () => {
    await seed(4, { segmentBytesMax: 1 });
    const segs = await segments();
    await writeFile(segs[3]!, '');
    const message = await expectRefused(new RegExp(`the last segment ${segs[3]} holds no commit and 0 bytes.*${segs[2]} is sealed.*from index 4 on, are lost`));
    follow(message, `by giving ${segs[3]} its zeros: `);
    const { log, entries } = await reopen();
    expect(entries.map((e) => e.index)).toEqual([1, 2, 3]);
    await log.append(proposals(4, 1));
    expect((await stat(join(fx.dir, 'wal', `${pad(4)}.seg`))).size).toBeGreaterThan(0);
  });
});

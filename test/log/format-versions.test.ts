// Goal: every log record carries a format version; this code reads the form written before the
// version existed (version 1, no field) and stops on a newer version, naming both, rather than misread
// or truncate it. Covers the WAL's commit frames and snapshot files, the JetStream commit messages and
// snapshot records, and the state snapshot data.
import { createHash } from 'node:crypto';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { gunzipSync, gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  encodeProposal, entryPayload, formatVersionOf, FormatVersionError, logFormatVersion, parseCommit, parseSnapshot, snapshotPayload,
  writtenFormatVersion,
} from '../../src/log/index.ts';
import { commitItemJson, parseCommitMessage, parseSnapshotRecord } from '../../cluster/jetstream/format.ts';
import { checkedSnapshotData, encodeSnapshotFile, readSnapshotFile, RegistryState, toSnapshotData } from '../../src/state/index.ts';
import { commitsIn, frame, frameOffsets, pad, proposals, WalFixture, withZeros } from './wal-fixture.ts';

const newer = logFormatVersion + 1;
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const versionMessage = new RegExp(`format version ${newer}, newer than this node reads \\(versions up to ${logFormatVersion}\\)`);

describe('log format versions: the shared commit and snapshot payloads', () => {
  const item = encodeProposal({ pid: 'n1-1', cmd: { t: 'barrier' } }, 1 << 20);

  it('writes the version on every entry and on the snapshot payload', () => {
    expect(JSON.parse(entryPayload(1, 10, item))).toMatchObject({ i: 1, v: writtenFormatVersion });
    expect(JSON.parse(snapshotPayload({ index: 3, data: { a: 1 } }))).toEqual({ index: 3, data: { a: 1 }, v: writtenFormatVersion });
  });

  it('writes an entry whose command a version-1 reader would apply wrongly, unnoticed, as version 2, which such a reader refuses', () => {
    const register = { t: 'catalog.register', node: 'ext', id: '', address: '10.0.0.1', meta: {}, checks: [] } as const;
    const cases = [
      [{ ...register }, 1],
      [{ ...register, taggedAddresses: { wan: '198.51.100.7' } }, 2],
      [{ ...register, replaces: 'old-name' }, 2],
      [{ t: 'txn.kv', ops: [] }, 1],
    ] as const;
    for (const [cmd, version] of cases) {
      const entry = JSON.parse(entryPayload(1, 10, encodeProposal({ pid: 'n1-1', cmd: cmd as never }, 1 << 20)));
      expect(entry.v, JSON.stringify(cmd)).toBe(version);
      expect(JSON.parse(commitItemJson(encodeProposal({ pid: 'n1-1', cmd: cmd as never }, 1 << 20), 10)).v).toBe(version);
      // A release that reads only version 1 stops at it rather than drop the fields it does not know.
      if (version === 2) expect(() => formatVersionOf('log entry 1', entry.v, 1)).toThrow(FormatVersionError);
    }
    expect(parseCommit(`[${entryPayload(1, 10, encodeProposal({ pid: 'n1-1', cmd: cases[1][0] as never }, 1 << 20))}]`, 1)).toMatchObject([{ cmd: { taggedAddresses: { wan: '198.51.100.7' } } }]);
  });

  it('reads entries and snapshots without a version as version 1', () => {
    const old = '[{"i":5,"t":10,"p":"n1-1","c":{"t":"barrier"}},{"i":6,"t":10,"p":"n1-2","c":{"t":"barrier"}}]';
    expect(parseCommit(old, 5)).toEqual([
      { index: 5, atMs: 10, pid: 'n1-1', cmd: { t: 'barrier' } }, { index: 6, atMs: 10, pid: 'n1-2', cmd: { t: 'barrier' } },
    ]);
    expect(parseSnapshot('{"index":7,"data":{"x":[1]}}')).toEqual({ index: 7, data: { x: [1] } });
  });

  it('refuses an entry or a snapshot of a newer version with an error naming both versions', () => {
    const future = `[{"i":5,"t":10,"p":"n1-1","c":{"t":"barrier"},"v":${newer}}]`;
    expect(() => parseCommit(future, 5)).toThrow(FormatVersionError);
    expect(() => parseCommit(future, 5)).toThrow(versionMessage);
    expect(() => parseSnapshot(`{"index":7,"data":{},"v":${newer}}`)).toThrow(versionMessage);
  });

  it('reports a version that is not a positive integer as damage, not as a newer format', () => {
    expect(parseCommit('[{"i":5,"t":10,"p":"n1-1","c":{"t":"barrier"},"v":"2"}]', 5)).toMatch(/bad format version/);
    expect(parseSnapshot('{"index":7,"data":{},"v":0}')).toMatch(/bad format version/);
  });
});

describe('log format versions: JetStream commit messages and snapshot records', () => {
  const record = { index: 9, seq: 4, seqIndex: 8, seqAtMs: 10, stream: 'ROSTER', streamCreated: '2026-01-01T00:00:00Z', node: 'n1', data: { a: 1 } };

  it('writes the version on every proposal of a commit message and reads the unversioned form', () => {
    const item = encodeProposal({ pid: 'n1-1', cmd: { t: 'barrier' } }, 1 << 20);
    expect(parseCommitMessage(bytes(`[${commitItemJson(item, 10)}]`))).toEqual([{ p: 'n1-1', c: { t: 'barrier' }, t: 10 }]);
    expect(JSON.parse(commitItemJson(item, 10))).toMatchObject({ v: writtenFormatVersion });
    expect(parseCommitMessage(bytes('[{"p":"n1-1","c":{"t":"barrier"},"t":10}]'))).toEqual([{ p: 'n1-1', c: { t: 'barrier' }, t: 10 }]);
  });

  it('throws on a commit message of a newer version instead of skipping it', () => {
    const future = bytes(`[{"p":"n1-1","c":{"t":"barrier"},"t":10,"v":${newer}}]`);
    expect(() => parseCommitMessage(future)).toThrow(versionMessage);
  });

  it('reads a snapshot record without a version as version 1 and refuses a newer one', () => {
    expect(parseSnapshotRecord(JSON.stringify(record))).toMatchObject({ index: 9, v: 1 });
    expect(() => parseSnapshotRecord(JSON.stringify({ ...record, v: newer }))).toThrow(versionMessage);
  });
});

describe('log format versions: the state snapshot data', () => {
  it('refuses state data of a newer version naming both versions', () => {
    const data = toSnapshotData(new RegistryState());
    expect(checkedSnapshotData(data)).toBe(data);
    expect(() => checkedSnapshotData({ ...data, version: 7 })).toThrow(/format version 7, newer than this node reads \(version 1\)/);
  });
});

describe('log format versions: the payload of a backup file', () => {
  /** The file with its payload line rewritten by `edit` and its trailer computed again. */
  async function withPayload(edit: (payload: string) => string): Promise<Buffer> {
    const { file } = await encodeSnapshotFile(toSnapshotData(new RegistryState()), 'n1', 0);
    const [header, payload] = gunzipSync(file).toString('utf8').split('\n');
    const body = `${header}\n${edit(payload!)}\n`;
    const trailer = JSON.stringify({ sha256: createHash('sha256').update(body).digest('hex'), bytes: Buffer.byteLength(body) });
    return gzipSync(`${body}${trailer}\n`);
  }

  it('reads a payload without a version and refuses a newer one as a bad payload naming both versions', async () => {
    expect(readSnapshotFile(await withPayload((p) => p.replace(/,"v":\d+\}$/, '}'))).data.version).toBe(1);
    await expect(withPayload((p) => p.replace(/,"v":\d+\}$/, `,"v":${newer}}`)).then(readSnapshotFile))
      .rejects.toThrow(new RegExp(`bad payload: snapshot at index 0 is in format version ${newer}, newer than this node reads`));
  });
});

describe('log format versions: a WAL data dir', () => {
  const fx = WalFixture.use();
  const { reopen, seed, segments, readUsed, filesOfDir } = fx;

  /** Rewrites every commit frame of the only segment with `edit` applied to each of its entries. */
  async function rewriteEntries(edit: (e: Record<string, unknown>, commit: number) => void): Promise<void> {
    const [seg] = await segments();
    const buf = await readUsed(seg!);
    const commits = commitsIn(buf) as unknown as Record<string, unknown>[][];
    expect(frameOffsets(buf)).toHaveLength(commits.length);
    commits.forEach((c, k) => c.forEach((e) => edit(e, k)));
    await writeFile(seg!, withZeros(Buffer.concat(commits.map((c) => frame(JSON.stringify(c))))));
  }

  it('replays segments written without versions and appends after them', async () => {
    await seed(3);
    await rewriteEntries((e) => {
      expect(e.v).toBe(writtenFormatVersion);
      delete e.v;
    });
    const { log, entries } = await reopen();
    expect(entries.map((e) => e.pid)).toEqual(['n1-1', 'n1-2', 'n1-3']);
    await log.append(proposals(4, 1));
    await log.close();
    const again = await reopen();
    expect(again.entries.map((e) => e.index)).toEqual([1, 2, 3, 4]);
  });

  for (const at of [0, 2]) {
    it(`stops on a commit of a newer version (commit ${at + 1} of 3) and leaves the files as they were`, async () => {
      await seed(3);
      await rewriteEntries((e, k) => {
        if (k === at) e.v = newer;
      });
      const before = await filesOfDir();
      const err = await fx.make().open().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(FormatVersionError);
      expect((err as Error).message).toMatch(versionMessage);
      expect(await filesOfDir()).toEqual(before);
    });
  }

  it('loads a snapshot file without a version and stops on one of a newer version', async () => {
    await seed(3);
    const snapDir = join(fx.dir, 'snap');
    await mkdir(snapDir, { recursive: true });
    const path = join(snapDir, `${pad(3)}.snap`);
    await writeFile(path, frame('{"index":3,"data":{"state":"old"}}'));
    const { log, snapIndex } = await reopen();
    expect(snapIndex).toBe(3);
    await log.close();
    await writeFile(path, frame(`{"index":3,"data":{"state":"new"},"v":${newer}}`));
    const err = await fx.make().open().then(() => undefined, (e: unknown) => e);
    expect((err as Error).message).toMatch(versionMessage);
    expect((await readFile(path)).length).toBeGreaterThan(8);
  });
});

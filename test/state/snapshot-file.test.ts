// Goal: the backup file format (src/state/snapshot-file.ts) — written in pieces and read back to the same
// state data; a header naming another layout version, a flipped byte, a truncated file or another
// file altogether is refused with a message saying which; a damaged payload is reported as a bad checksum.
// A restore entry naming an attachment gets the file's data, checked against the SHA-256 it carries.
import { gzipSync, gunzipSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { createHash } from 'node:crypto';
import { encodeSnapshotFile, openSnapshotFile, readSnapshotFile, restoreCommand, toSnapshotData } from '../../src/state/index.ts';
import { acquire, session, set, stateOf } from './apply-table.ts';

const data = toSnapshotData(stateOf([set('a', 'eA=='), set('b\nc', null, '7'), session('s1'), acquire('a', 's1')]));

describe('snapshot file', () => {
  test('round trip: header, counts and the state data', async () => {
    const { file, meta, sha256 } = await encodeSnapshotFile(data, 'n1', Date.UTC(2026, 0, 2));
    expect(meta).toEqual({
      format: 'roster-snapshot', version: 1, index: data.index, atMs: data.atMs, createdAt: '2026-01-02T00:00:00.000Z', node: 'n1',
      counts: { keys: 2, sessions: 1, checks: 1, services: 0, nodes: 1 },
    });
    const read = readSnapshotFile(file);
    expect(read.meta).toEqual(meta);
    expect(read.data).toEqual(JSON.parse(JSON.stringify(data)));
    expect(openSnapshotFile(file)).toMatchObject({ sha256, checksumOk: true });
  });

  test('damage is refused, saying what is wrong', async () => {
    const { file } = await encodeSnapshotFile(data, 'n1', 0);
    const text = gunzipSync(file);
    const damaged = Buffer.from(text);
    damaged[text.indexOf('"value"') + 10]! ^= 0x01;
    expect(openSnapshotFile(gzipSync(damaged)).checksumOk).toBe(false);
    expect(() => readSnapshotFile(gzipSync(damaged))).toThrow('checksum mismatch: the file is damaged');
    expect(() => readSnapshotFile(file.subarray(0, file.length - 10))).toThrow(/not a complete gzip stream/);
    expect(() => readSnapshotFile(Buffer.from('hello'))).toThrow(/not a complete gzip stream/);
    expect(() => readSnapshotFile(gzipSync('{"format":"other"}\n{}\n{}\n'))).toThrow('not a Roster snapshot: format "other"');
    const newer = Buffer.from(text.toString('utf8').replace('"version":1', '"version":2'));
    expect(() => readSnapshotFile(gzipSync(newer))).toThrow('unsupported snapshot file version 2 (this agent reads version 1)');
  });
});

describe('a restore entry that names an attachment', () => {
  test('gets the data of the file, checked against its SHA-256; a log without attachments or a damaged file stops', async () => {
    const { file } = await encodeSnapshotFile(data, 'n1', 0);
    const sha256 = createHash('sha256').update(file).digest('hex');
    const cmd = { t: 'state.restore' as const, attachment: { name: `${sha256}.bin`, sha256 } };
    expect(restoreCommand(cmd, () => file)).toEqual({ t: 'state.restore', data: JSON.parse(JSON.stringify(data)) });
    const inline = { t: 'state.restore' as const, data };
    expect(restoreCommand(inline, undefined)).toBe(inline);
    expect(() => restoreCommand(cmd, undefined)).toThrow(/this log stores none/);
    expect(() => restoreCommand(cmd, () => Buffer.concat([file, Buffer.from('x')]))).toThrow(/is damaged/);
  });
});

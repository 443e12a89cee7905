// Goal: a snapshot written in pieces (snapshotPayloadChunks) is byte for byte the text the one-string
// encoder writes, for any JSON data, with any piece size, so readers cannot tell the two apart.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { snapshotPayload, snapshotPayloadChunks } from '../../src/log/index.ts';

describe('snapshotPayloadChunks', () => {
  test('the pieces concatenate to snapshotPayload for any data and piece size', () => {
    const data = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(fc.string(), fc.oneof(fc.jsonValue(), fc.array(fc.jsonValue(), { maxLength: 30 }), fc.constant(undefined))),
    );
    fc.assert(fc.property(fc.nat(1_000_000), data, fc.integer({ min: 1, max: 200 }), (index, d, chunkChars) => {
      const s = { index, data: d };
      const pieces = [...snapshotPayloadChunks(s, chunkChars)];
      expect(pieces.join('')).toBe(snapshotPayload(s));
      expect(pieces.every((p) => p.length > 0)).toBe(true);
    }), { numRuns: 3_000 });
  });

  test('a large array goes out in pieces near the requested size, never as one string', () => {
    const kv = Array.from({ length: 20_000 }, (_, k) => ({ key: `k/${k}`, value: 'x'.repeat(100), lockIndex: k }));
    const pieces = [...snapshotPayloadChunks({ index: 7, data: { version: 1, kv } }, 64 * 1024)];
    expect(pieces.length).toBeGreaterThan(20);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(64 * 1024 + 1_000);
    expect(JSON.parse(pieces.join(''))).toEqual({ index: 7, data: { version: 1, kv }, v: 1 });
  });
});

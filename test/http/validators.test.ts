// Goal: the validators of reads, through a started agent (http-conventions "Caching"; RFC 9110 §8.8, §13.1.3):
// the ETag changes whenever the representation does, even for a value a writer chose to collide with a
// checksum; If-Modified-Since never answers 304 for a value changed within the second the date names; and
// Last-Modified is never later than the Date beside it, right after a write too.
import { crc32 } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { client, sleep, withAgent, type Agent } from '../support/agent.ts';

let agent: Agent;
withAgent((a) => { agent = a; });

/**
 * `wanted` rewritten in its last four bytes so that its crc32 is `target`'s (same length): CRC-32 is affine
 * over GF(2), so the 32 bits of the tail solve a linear system.
 */
function crc32Twin(target: Buffer, wanted: Buffer): Buffer {
  const base = Buffer.from(wanted);
  base.fill(0, base.length - 4);
  const start = crc32(base);
  // Each tail bit's effect on the crc, kept in a basis by leading bit with the tail bits that make it.
  const basis = new Map<number, { effect: number; bits: number }>();
  for (let i = 0; i < 32; i++) {
    const flipped = Buffer.from(base);
    flipped[base.length - 4 + (i >> 3)]! ^= 1 << (i & 7);
    let effect = (crc32(flipped) ^ start) >>> 0;
    let bits = (1 << i) >>> 0;
    while (effect !== 0) {
      const lead = 31 - Math.clz32(effect);
      const row = basis.get(lead);
      if (row === undefined) { basis.set(lead, { effect, bits }); break; }
      effect = (effect ^ row.effect) >>> 0;
      bits = (bits ^ row.bits) >>> 0;
    }
  }
  let rest = (crc32(target) ^ start) >>> 0;
  let bits = 0;
  while (rest !== 0) {
    const row = basis.get(31 - Math.clz32(rest));
    if (row === undefined) throw new Error('no solution');
    rest = (rest ^ row.effect) >>> 0;
    bits = (bits ^ row.bits) >>> 0;
  }
  for (let i = 0; i < 32; i++) if ((bits >>> i) & 1) base[base.length - 4 + (i >> 3)]! ^= 1 << (i & 7);
  return base;
}

describe('ETag', () => {
  test('two values of one length and one crc32 get different tags; revalidating the first after the second is 200', async () => {
    const c = client(agent);
    const first = Buffer.from('release 1.4.2 to the blue pool today.');
    const second = crc32Twin(first, Buffer.from('release 6.6.6 to the green pool now!!'));
    expect([second.length, crc32(second), second.equals(first)]).toEqual([first.length, crc32(first), false]);
    await c.put('/v1/kv/validators/crc', first);
    const held = await c.get('/v1/kv/validators/crc?raw');
    await c.put('/v1/kv/validators/crc', second);
    const now = await c.get('/v1/kv/validators/crc?raw');
    expect(now.body.equals(second)).toBe(true);
    expect(now.headers.get('etag')).not.toBe(held.headers.get('etag'));
    const revalidated = await c.get('/v1/kv/validators/crc?raw', { 'if-none-match': held.headers.get('etag')! });
    expect(revalidated.status).toBe(200);
    expect(revalidated.body.equals(second)).toBe(true);
  });
});

describe('If-Modified-Since and Last-Modified', () => {
  test('a value changed within the second a client\'s date names is not "not modified"', async () => {
    const c = client(agent);
    for (let attempt = 0; ; attempt++) {
      // Early in a second, so that the two writes and the read between them fall in one second.
      await sleep(1000 - (Date.now() % 1000) + 20);
      const second = Math.floor(Date.now() / 1000);
      await c.put('/v1/kv/validators/ims', 'first');
      const held = await c.get('/v1/kv/validators/ims?raw');
      const readAt = new Date(Date.now() - (Date.now() % 1000));
      await c.put('/v1/kv/validators/ims', 'second');
      if (Math.floor(Date.now() / 1000) !== second) {
        if (attempt < 5) continue;
        throw new Error('could not keep two writes within one second');
      }
      expect(held.text).toBe('first');
      // The client's copy is from the second the date names (its own clock, truncated as HTTP dates are).
      for (const path of ['/v1/kv/validators/ims', '/v1/kv/validators/ims?raw']) {
        const r = await c.get(path, { 'if-modified-since': readAt.toUTCString() });
        expect(r.status, path).toBe(200);
      }
      break;
    }
    // A date after the change: not modified.
    await sleep(1000 - (Date.now() % 1000) + 20);
    const after = new Date(Date.now() - (Date.now() % 1000)).toUTCString();
    expect((await c.get('/v1/kv/validators/ims', { 'if-modified-since': after })).status).toBe(304);
  });

  test('right after a write, Last-Modified is never later than Date', async () => {
    const c = client(agent);
    const seen: string[] = [];
    for (let i = 0; i < 14; i++) {
      await c.put('/v1/kv/validators/lm', `x${i}`);
      const r = await c.get('/v1/kv/validators/lm');
      const date = Date.parse(r.headers.get('date')!);
      const lastModified = Date.parse(r.headers.get('last-modified')!);
      seen.push(`${r.headers.get('date')} / ${r.headers.get('last-modified')}`);
      expect(lastModified, seen.join('\n')).toBeLessThanOrEqual(date);
      await sleep(190);
    }
  });
});

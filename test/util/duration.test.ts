// Goal: readGoDuration answers by Go's grammar whatever was read before it (it keeps the last answer for a
// repeated text), and the answers it hands out cannot be changed by a caller.
import { expect, test } from 'vitest';
import { readGoDuration } from '../../src/util/duration.ts';

test('repeated and alternating texts each get their own answer', () => {
  const texts = ['10s', '10s', '1m30s', 'x', '10s', '2562047h47m16.854775807s', '2562048h', '10', '10', '-1.5ms', '0'];
  const expected = [{ ns: 1e10 }, { ns: 1e10 }, { ns: 9e10 }, { problem: 'format' }, { ns: 1e10 }, { ns: 2 ** 63 - 1 },
    { problem: 'range' }, { problem: 'format' }, { problem: 'format' }, { ns: -1.5e6 }, { ns: 0 }];
  expect(texts.map(readGoDuration)).toEqual(expected);
});

test('an answer is frozen: a caller cannot change what the next reader of the same text gets', () => {
  const first = readGoDuration('250ms') as { ns: number };
  expect(() => { first.ns = 1; }).toThrow(TypeError);
  expect(readGoDuration('250ms')).toEqual({ ns: 250e6 });
});

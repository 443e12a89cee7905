// Goal: readGoDuration takes and refuses exactly what Go's time.ParseDuration does, with Go's arithmetic at the
// int64 edges and Go's error text for each refusal (the consul dialect answers with it); it answers by Go's
// grammar whatever was read before it (it keeps the last answer for a repeated text), and the answers it hands
// out cannot be changed by a caller.
import { expect, test } from 'vitest';
import { readGoDuration } from '../../src/util/duration.ts';

const taken: Array<[string, number]> = [
  ['10s', 1e10], ['1h30m', 5.4e12], ['1.5s', 1.5e9], ['.5s', 5e8], ['1.s', 1e9], ['-1.5ms', -1.5e6], ['+5s', 5e9],
  ['0', 0], ['-0', 0], ['+0', 0], ['0s', 0], ['-0s', 0], ['1us', 1e3], ['1\u00b5s', 1e3], ['1\u03bcs', 1e3], ['15000ms', 1.5e10],
  ['1h0m0s', 3.6e12], ['2h45m', 9.9e12], ['1.0000000001s', 1e9],
  // Go truncates a fraction's share of a unit: under a nanosecond is nothing.
  ['0.9999999999ns', 0], ['1.9999999999ns', 1],
  ['2562047h47m16.854775807s', 2 ** 63 - 1], ['9223372036854775807ns', 2 ** 63 - 1], ['-9223372036854775808ns', -(2 ** 63)],
];

test.each(taken)('%j is %d ns', (text, ns) => {
  expect(readGoDuration(text)).toEqual({ ns });
});

const invalid = (text: string) => `time: invalid duration ${text}`;
const refused: Array<[string, 'format' | 'range', string]> = [
  ['', 'format', invalid('""')],
  ['x', 'format', invalid('"x"')],
  ['-', 'format', invalid('"-"')],
  ['.s', 'format', invalid('".s"')],
  ['+-1s', 'format', invalid('"+-1s"')],
  [' 1s', 'format', invalid('" 1s"')],
  ['a"b\\', 'format', invalid('"a\\"b\\\\"')],
  ['\u0663s', 'format', invalid('"\\xd9\\xa3s"')],
  ['20', 'format', 'time: missing unit in duration "20"'],
  ['-1', 'format', 'time: missing unit in duration "-1"'],
  ['00', 'format', 'time: missing unit in duration "00"'],
  ['0.0', 'format', 'time: missing unit in duration "0.0"'],
  ['1..5s', 'format', 'time: missing unit in duration "1..5s"'],
  ['1500000000', 'format', 'time: missing unit in duration "1500000000"'],
  ['5x', 'format', 'time: unknown unit "x" in duration "5x"'],
  ['1e3s', 'format', 'time: unknown unit "e" in duration "1e3s"'],
  ['5 s', 'format', 'time: unknown unit " s" in duration "5 s"'],
  ['1h-5m', 'format', 'time: unknown unit "h-" in duration "1h-5m"'],
  ['1S', 'format', 'time: unknown unit "S" in duration "1S"'],
  ['1d', 'format', 'time: unknown unit "d" in duration "1d"'],
  ['1\t', 'format', 'time: unknown unit "\\x09" in duration "1\\x09"'],
  ['5\u00b5x', 'format', 'time: unknown unit "\\xc2\\xb5x" in duration "5\\xc2\\xb5x"'],
  ['9223372036854775808ns', 'range', invalid('"9223372036854775808ns"')],
  ['2562048h', 'range', invalid('"2562048h"')],
  ['2562047h47m16.854775808s', 'range', invalid('"2562047h47m16.854775808s"')],
  ['99999999999999999999ns', 'range', invalid('"99999999999999999999ns"')],
  ['-9223372036854775809ns', 'range', invalid('"-9223372036854775809ns"')],
  ['1000000000h', 'range', invalid('"1000000000h"')],
];

test.each(refused)('%j is refused (%s): %s', (text, problem, goError) => {
  expect(readGoDuration(text)).toEqual({ problem, goError });
});

test('repeated and alternating texts each get their own answer', () => {
  const texts = ['10s', '10s', '1m30s', 'x', '10s', '2562047h47m16.854775807s', '2562048h', '10', '10', '-1.5ms', '0'];
  const expected = [{ ns: 1e10 }, { ns: 1e10 }, { ns: 9e10 }, { problem: 'format', goError: invalid('"x"') }, { ns: 1e10 }, { ns: 2 ** 63 - 1 },
    { problem: 'range', goError: invalid('"2562048h"') }, { problem: 'format', goError: 'time: missing unit in duration "10"' },
    { problem: 'format', goError: 'time: missing unit in duration "10"' }, { ns: -1.5e6 }, { ns: 0 }];
  expect(texts.map(readGoDuration)).toEqual(expected);
});

test('an answer is frozen: a caller cannot change what the next reader of the same text gets', () => {
  const first = readGoDuration('250ms') as { ns: number };
  expect(() => { first.ns = 1; }).toThrow(TypeError);
  expect(readGoDuration('250ms')).toEqual({ ns: 250e6 });
});

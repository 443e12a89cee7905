// Goal: the benches' shared option checks accept what their usage texts promise and refuse the rest with
// the option's name and range: seconds, counts, comma lists of counts, subsets of named things kept in
// their documented order, and unknown options.
import { describe, expect, test } from 'vitest';
import { count, countList, namesOf, parseBenchArgs, resultsPath, seconds } from '../../bench/support/options.ts';

describe('bench options', () => {
  test('parseBenchArgs: declared options and --help; unknown options and positionals throw', () => {
    expect(parseBenchArgs(['--duration', '2', '-h'], { duration: { type: 'string' } })).toEqual({ duration: '2', help: true });
    expect(() => parseBenchArgs(['--bogus'], { duration: { type: 'string' } })).toThrow(/Unknown option '--bogus'/);
    expect(() => parseBenchArgs(['stray'], {})).toThrow(/positional/);
  });

  test('seconds: the default, the bounds, and the message naming the option', () => {
    expect(seconds('duration', undefined, 5)).toBe(5);
    expect(seconds('duration', '0.5', 5)).toBe(0.5);
    expect(() => seconds('duration', '0', 5)).toThrow('--duration: "0" is not a number of seconds (positive)');
    expect(() => seconds('duration', 'x', 5)).toThrow(/--duration: "x"/);
    expect(seconds('duration', '3600', 5, { max: 3600 })).toBe(3600);
    expect(() => seconds('duration', '3601', 5, { max: 3600 })).toThrow('(0, 3600]');
    expect(seconds('duration', '1', 5, { min: 1, minIncluded: true, max: 600 })).toBe(1);
    expect(() => seconds('duration', '0.9', 5, { min: 1, minIncluded: true, max: 600 })).toThrow('[1, 600]');
  });

  test('count and countList: whole numbers within the range; a list needs one at least', () => {
    expect(count('keys', undefined, 1000, 1, 10_000)).toBe(1000);
    expect(count('sessions', '0', 5, 0, 10)).toBe(0);
    expect(() => count('keys', '1.5', 5, 1, 10)).toThrow('--keys: "1.5" is not a whole number from 1 to 10');
    expect(() => count('keys', '11', 5, 1, 10)).toThrow(/from 1 to 10/);
    expect(countList('clients', undefined, '1,16,64', 4096)).toEqual([1, 16, 64]);
    expect(countList('clients', ' 4 , 8 ,', '1', 4096)).toEqual([4, 8]);
    expect(() => countList('clients', '0', '1', 4096)).toThrow('--clients: "0" is not a whole number from 1 to 4096');
    expect(() => countList('clients', ',', '1', 4096)).toThrow('--clients: give at least one count');
  });

  test('namesOf: a subset in the documented order, all by default, unknown names refused', () => {
    const known = ['distinct', 'shared'] as const;
    expect(namesOf('scenarios', undefined, known)).toEqual(['distinct', 'shared']);
    expect(namesOf('scenarios', 'shared,distinct', known)).toEqual(['distinct', 'shared']);
    expect(namesOf('scenarios', 'shared', known)).toEqual(['shared']);
    expect(() => namesOf('scenarios', 'foo', known)).toThrow('--scenarios: "foo" is not one of distinct, shared');
    expect(() => namesOf('scenarios', ' ', known)).toThrow(/name at least one/);
  });

  test('resultsPath: the given path made absolute, else a timestamped file under bench/results', () => {
    expect(resultsPath('/tmp/x.json', 'memory')).toBe('/tmp/x.json');
    expect(resultsPath(undefined, 'memory')).toMatch(/\/bench\/results\/memory-\d{4}-\d{2}-\d{2}T[\d-]+Z\.json$/);
  });
});

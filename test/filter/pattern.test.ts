// Goal: `matches` patterns compile as Go's regexp (RE2) does and can never run super-linearly: patterns that
// backtrack catastrophically in JavaScript give RE2's answer; Perl-only syntax is refused with Go's text; the
// program size of one filter's patterns is bounded, read from the text before compiling, and that bound
// never falls short of the size the pattern compiles to.
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, test } from 'vitest';
import { checkSchema, healthEntrySchema, nodeSchema } from '../../src/filter/index.ts';
import { compilePattern, filterPatternInstsMax, patternBudget, programSizeBound } from '../../src/filter/pattern.ts';
import { check, compileError, entry, prefix, run } from './support.ts';

const at = { line: 1, column: 1, offset: 0 };
const matcher = (pattern: string) => compilePattern(pattern, at, patternBudget());

describe('patterns that backtrack catastrophically in JavaScript', () => {
  test('(?i)(.+)+Z against a node ID and a long text: no match', () => {
    expect(run('ID matches "(?i)(.+)+Z"', nodeSchema, { ID: '5f1c0e6a-35b2-4c3e-9d8a-0b6f3c2d1e4f' })).toBe(false);
    expect(matcher('(?i)(.+)+Z')('a'.repeat(100_000))).toBe(false);
    expect(matcher('(?i)(.+)+Z')(`${'a'.repeat(100_000)}z`)).toBe(true);
  });

  test('(.+){2,40}Z against a 4 KiB output', () => {
    expect(run('Output matches "(.+){2,40}Z"', checkSchema, check({ Output: 'x'.repeat(4096) }))).toBe(false);
    expect(run('Output matches "(.+){2,40}Z"', checkSchema, check({ Output: `${'x'.repeat(4096)}Z` }))).toBe(true);
  });

  test('(a+){2,30}$ and (?i)(a+)+$ against a run of a\'s ending in "!"', () => {
    const meta = (value: string) => entry({}, [], { Meta: { x: value } });
    expect(run('Node.Meta.x matches "(a+){2,30}$"', healthEntrySchema, meta(`${'a'.repeat(30)}!`))).toBe(false);
    expect(run('Node.Meta.x matches "(a+){2,30}$"', healthEntrySchema, meta('a'.repeat(30)))).toBe(true);
    expect(matcher('(?i)(a+)+$')(`${'a'.repeat(26)}!`)).toBe(false);
    expect(matcher('(?i)(a+)+$')('A'.repeat(26))).toBe(true);
    expect(matcher('(a|aa)+$')(`${'a'.repeat(10_000)}!`)).toBe(false);
  });
});

describe('RE2 syntax, as Go reads it', () => {
  test.each([
    ['(?i)^web', 'WEB-1', true],
    ['(?s)a.b', 'a\nb', true],
    ['a.b', 'a\nb', false],
    ['(?m)^b$', 'a\nb\nc', true],
    ['^b$', 'a\nb\nc', false],
    ['a$', 'a\n', false], // $ is the end of the text, not before a final newline
    ['^\\pL+$', 'héllo', true],
    ['^\\p{Greek}+$', 'αβγ', true],
    ['^.$', '😀', true], // one rune, though two UTF-16 code units
    ['(?i)k', '\u212a', true], // Kelvin sign folds to k
    ['\\Qa.b\\E', 'axb', false],
    ['\\Qa.b\\E', 'a.b', true],
    ['^[[:alpha:]]+$', 'abc', true],
    ['\\x{41}\\x42', 'AB', true],
    ['(?P<n>a)(?<m>b)', 'ab', true],
    ['\\-\\_', '-_', true],
    ['^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', '5f1c0e6a-35b2-4c3e-9d8a-0b6f3c2d1e4f', true],
    ['x{2,}', 'xx', true],
    ['x{2,}', 'x', false],
    ['{', '{', true],
  ])('%s on %j: %s', (pattern, text, expected) => {
    expect(matcher(pattern)(text)).toBe(expected);
  });

  test.each([
    ['(?=a)', 'invalid or unsupported Perl syntax: `(?=`'],
    ['(?!a)', 'invalid or unsupported Perl syntax: `(?!`'],
    ['(?<=a)b', 'invalid named capture: `(?<=a)b`'],
    ['(a)\\1', 'invalid escape sequence: `\\1`'],
    ['a\\Z', 'invalid escape sequence: `\\Z`'],
    ['a**', 'invalid nested repetition operator: `**`'],
    ['a{1001}', 'invalid repeat count: `{1001}`'],
    ['(a{100}){100}', 'invalid repeat count: `{100}`'],
    ['a(', 'missing closing ): `a(`'],
    ['[z-a]', 'invalid character class range: `z-a`'],
  ])('%s is refused: %s', (pattern, why) => {
    const error = compileError(`Name matches \`${pattern}\``);
    expect(error.message).toBe(`${prefix}Failed to compile regular expression ${JSON.stringify(pattern)}: error parsing regexp: ${why}`);
    expect(error.position).toEqual({ line: 1, column: 14, offset: 13 });
  });
});

describe('the program size of one filter\'s patterns is bounded', () => {
  test('a counted repetition past the bound is refused before it compiles, naming the repetition', () => {
    const error = compileError('Name matches "(?:a|aa){0,1000}"');
    expect(error.message).toBe(`${prefix}Failed to compile regular expression "(?:a|aa){0,1000}": expression too large: `
      + `the patterns of one filter may compile to at most ${filterPatternInstsMax} RE2 instructions, `
      + 'and this one may take up to 5003; the largest part is the counted repetition `{0,1000}`');
    expect(error.expected).toEqual(['an RE2 regular expression']);
  });

  test('the bound is for the whole filter: what earlier patterns take counts', () => {
    const half = '^.{0,240}$'; // 484 instructions
    expect(run(`Name matches "${half}" and Notes matches "${half}"`, checkSchema, check())).toBe(true);
    const error = compileError(`Name matches "${half}" and Notes matches "${half}" and Output matches "${half}"`);
    expect(error.message).toContain('(the filter\'s earlier patterns take 968)');
    expect(error.position?.offset).toBe(`Name matches "${half}" and Notes matches "${half}" and Output matches `.length);
  });

  test('what Go reads as a literal `{` is read as one here too: the bound is not fooled', () => {
    expect(programSizeBound('(?:(?:a|aa){0,999}){02}')).toEqual({ insts: 5002, largestRepeat: '{0,999}', repeatInvalid: false });
    expect(compileError('Name matches "(?:(?:a|aa){0,999}){02}"').message).toContain('expression too large');
    expect(matcher('^a{01}$')('a{01}')).toBe(true);
  });

  test('realistic patterns fit with room to spare', () => {
    for (const pattern of ['^.{0,255}$', '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$', '(?i)error|fail|critical']) {
      expect(programSizeBound(pattern).insts).toBeLessThan(filterPatternInstsMax);
      expect(() => matcher(pattern)).not.toThrow();
    }
  });

  test('the bound is never below the compiled size, and a repetition past Go\'s counts is found as Go finds it', () => {
    const atom = fc.constantFrom('a', 'é', '😀', '.', '\\d', '\\pL', '\\p{Greek}', '[a-z]', '[^]x]', '[[:alpha:]\\]]', '\\x41',
      '\\x{1F600}', '\\Qa.b\\E', '\\012', '^', '$', '\\b', '{', '}', ',', '(?i)', '|');
    const op = fc.constantFrom('', '', '*', '+', '?', '*?', '{2}', '{0,3}', '{3,}', '{1,5}?', '{0}', '{12}', '{0,40}', '{334}', '{2,}', '{0,500}', '{05}', '{2,1}', '{0,0999}');
    const opening = fc.constantFrom('(', '(?:', '(?i:', '(?P<n>', '(?<m>', '(?s-i:');
    const { pattern } = fc.letrec<{ pattern: string }>((tie) => ({
      pattern: fc.array(fc.oneof(fc.tuple(atom, op).map(([a, o]) => a + o), fc.tuple(opening, tie('pattern'), op).map(([o, p, q]) => `${o}${p})${q}`)),
        { maxLength: 5, depthIdentifier: 'pattern' }).map((parts) => parts.join('')),
    }));
    fc.assert(fc.property(pattern, (p) => {
      const bound = programSizeBound(p);
      let compiled: RE2JS;
      try {
        compiled = RE2JS.compile(p);
      } catch (error) {
        // Another error may come first (a duplicate group name); this one Go's parser finds at the repetition.
        if ((error as Error).message.includes('invalid repeat count')) expect(bound.repeatInvalid).toBe(true);
        return;
      }
      expect(bound.repeatInvalid).toBe(false);
      expect(bound.insts).toBeGreaterThanOrEqual(compiled.programSize());
    }), { numRuns: 3000 });
  });

  test('reading the bound is one pass over text made to make a scanner go back', () => {
    for (const unit of ['(?<', '(?P<a', '[[:', '\\p{', '{1', '(?iiii', '\\Q']) {
      expect(programSizeBound(unit.repeat(40_000)).insts).toBeGreaterThan(0);
    }
  });
});

// Goal: a ?filter= that does not compile fails with go-bexpr v0.1.2's exact error text (consul-compat.md §5),
// the position it points at and what was expected there.
import { describe, expect, test } from 'vitest';
import { agentServiceSchema, checkSchema, healthEntrySchema, nodeSchema, type Schema } from '../../src/filter/index.ts';
import { check, compileError, prefix, run } from './support.ts';

describe('errors: Consul\'s texts, with position and expected', () => {
  test('Node == host-name and Address == 10.0.0.1 are parse errors (quote them)', () => {
    expect(compileError('Node == host-name').message).toBe(
      `${prefix}1:13 (12): no match found, expected: ".", "[", [ \\t\\r\\n], [a-zA-Z0-9_] or EOF`,
    );
    const dotted = compileError('Address == 10.0.0.1', nodeSchema);
    expect(dotted.message).toBe(`${prefix}1:16 (15): rule "number": Invalid number literal`);
    expect(dotted.position).toEqual({ line: 1, column: 16, offset: 15 });
  });

  test('no match found lists what was wanted at the farthest point', () => {
    const cases: [string, string][] = [
      ['Foo', '1:4 (3): no match found, expected: "!=", ".", "==", "[", [ \\t\\r\\n] or [a-zA-Z0-9_]'],
      ['Foo ~ bar', '1:5 (4): no match found, expected: "!=", "==", "contains", "in", "is", "matches", "not" or [ \\t\\r\\n]'],
      ['Status = passing', '1:8 (7): no match found, expected: "!=", "==", "contains", "in", "is", "matches", "not" or [ \\t\\r\\n]'],
      ['Status == passing and', '1:22 (21): no match found, expected: [ \\t\\r\\n]'],
      ['Status == passing and ', '1:23 (22): no match found, expected: "(", "-", "0", "\\"", "`", "not", [ \\t\\r\\n], [1-9] or [a-zA-Z]'],
      ['Status == passing extra', '1:19 (18): no match found, expected: "and", "or", [ \\t\\r\\n] or EOF'],
      ['32 == 32', '1:4 (3): no match found, expected: "in", "not" or [ \\t\\r\\n]'],
      ['', '1:1 (0): no match found, expected: "(", "-", "0", "\\"", "`", "not", [ \\t\\r\\n], [1-9] or [a-zA-Z]'],
    ];
    for (const [expression, detail] of cases) expect(compileError(expression).message, expression).toBe(prefix + detail);
    const error = compileError('Foo');
    expect(error.position).toEqual({ line: 1, column: 4, offset: 3 });
    expect(error.expected).toEqual(['"!="', '"."', '"=="', '"["', '[ \\t\\r\\n]', '[a-zA-Z0-9_]']);
    expect(error.detail).toBe(error.message.slice(prefix.length));
  });

  test('predicate errors name their rule', () => {
    const cases: [string, string][] = [
      ['Status == "passing', '1:19 (18): rule "string": Unterminated string literal'],
      ['Status == `passing', '1:19 (18): rule "string": Unterminated string literal'],
      ['Status == "pass\\qing"', '1:11 (10): rule "string": invalid syntax'],
      ['Status == 3x', '1:12 (11): rule "number": Invalid number literal'],
      ['Service.Meta[3] == x', '1:14 (13): rule "index": Invalid index'],
      ['Service.Meta["a" == x', '1:18 (17): rule "index": Unclosed index expression'],
      ['x in 32', '1:6 (5): rule "match": Invalid selector'],
      ['(Status == passing', '1:19 (18): rule "grouping": Unmatched parentheses'],
    ];
    for (const [expression, detail] of cases) expect(compileError(expression).message, expression).toBe(prefix + detail);
    expect(compileError('Status == "passing').expected).toEqual(['"\\""']);
  });

  test('positions count characters for the column and UTF-8 bytes for the offset; a newline starts a line', () => {
    expect(compileError('Name == "é" x').message).toBe(`${prefix}1:13 (13): no match found, expected: "and", "or", [ \\t\\r\\n] or EOF`);
    expect(compileError('Status ==\npassing ~').position).toEqual({ line: 2, column: 9, offset: 18 });
  });

  test('unknown selectors, including non-filterable fields', () => {
    const cases: [string, Schema, string][] = [
      ['Foo == bar', checkSchema, 'Selector ["Foo"] is not valid'],
      ['CreateIndex == 1', checkSchema, 'Selector ["CreateIndex"] is not valid'],
      ['status == passing', checkSchema, 'Selector ["status"] is not valid'],
      ['constructor == x', checkSchema, 'Selector ["constructor"] is not valid'],
      ['Service.Foo == x', healthEntrySchema, 'Selector ["Service" "Foo"] is not valid'],
      ['Checks.Definition is empty', healthEntrySchema, 'Selector ["Checks" "Definition"] is not valid'],
      ['ServiceTags.x == y', checkSchema, 'Selector ["ServiceTags" "x"] is not valid'],
      ['Service.Meta.a.b == y', healthEntrySchema, 'Selector ["Service" "Meta" "a" "b"] is not valid'],
      ['Datacenter == dc1', agentServiceSchema, 'Selector ["Datacenter"] is not valid'],
    ];
    for (const [expression, schema, detail] of cases) expect(compileError(expression, schema).message).toBe(prefix + detail);
    expect(compileError('Service.Meta["a\\tb\\u200b"].x == 1', healthEntrySchema).detail).toBe(
      'Selector ["Service" "Meta" "a\\tb\\u200b" "x"] is not valid', // Go %q escapes what is not printable
    );
    const error = compileError('Service.Foo == x', healthEntrySchema);
    expect(error.position).toEqual({ line: 1, column: 9, offset: 8 });
    expect(error.expected).toContain('Tags');
  });

  test('an operator the field type does not allow', () => {
    const cases: [string, Schema, string][] = [
      ['Notes is empty', checkSchema, 'Invalid match operator "Is Empty" for selector ["Notes"]'],
      ['ServiceTags == web', checkSchema, 'Invalid match operator "Equal" for selector ["ServiceTags"]'],
      ['ExposedPort contains 1', checkSchema, 'Invalid match operator "In" for selector ["ExposedPort"]'],
      ['Service.Port matches "80"', healthEntrySchema, 'Invalid match operator "Matches" for selector ["Service" "Port"]'],
      ['Service == web', healthEntrySchema, 'Invalid match operator "Equal" for selector ["Service"]'],
      ['Checks == x', healthEntrySchema, 'Invalid match operator "Equal" for selector ["Checks"]'],
      ['Service.Meta == x', healthEntrySchema, 'Invalid match operator "Equal" for selector ["Service" "Meta"]'],
    ];
    for (const [expression, schema, detail] of cases) expect(compileError(expression, schema).message).toBe(prefix + detail);
    expect(compileError('Notes is empty').expected).toContain('matches');
  });

  test('a pattern RE2 cannot parse, or Perl syntax RE2 does not have', () => {
    const error = compileError('Name matches "a("');
    expect(error.message).toBe(`${prefix}Failed to compile regular expression "a(": error parsing regexp: missing closing ): \`a(\``);
    expect(error.position).toEqual({ line: 1, column: 14, offset: 13 });
    expect(compileError('Name matches "(?=web)"').message).toBe(
      `${prefix}Failed to compile regular expression "(?=web)": error parsing regexp: invalid or unsupported Perl syntax: \`(?=\``,
    );
    expect(compileError('Name matches `(w)\\1`').message).toBe(
      `${prefix}Failed to compile regular expression "(w)\\\\1": error parsing regexp: invalid escape sequence: \`\\1\``,
    );
    expect(run('Name matches "[(?=]"', checkSchema, check({ Name: '=' }))).toBe(true); // literal inside a class
  });

  test('the first error from the left wins', () => {
    expect(compileError('Notes is empty or Foo == 1').message).toBe(`${prefix}Invalid match operator "Is Empty" for selector ["Notes"]`);
    expect(compileError('Foo == 1 and Notes is empty').message).toBe(`${prefix}Selector ["Foo"] is not valid`);
  });

  test('nesting is bounded; so are clauses: a chain of 128 runs, the 129th clause is refused where it begins', () => {
    const nested = (depth: number) => `${'('.repeat(depth)}Status == passing${')'.repeat(depth)}`;
    expect(run(nested(63), checkSchema, check())).toBe(true);
    expect(compileError(nested(200)).message).toMatch(/expression nested too deeply/);
    const chain = (n: number) => Array.from({ length: n }, (_, i) => `Status != s${i % 10}`).join(' and ');
    expect(run(chain(128), checkSchema, check())).toBe(true);
    const offset = chain(128).length + ' and '.length;
    const err = compileError(chain(3000));
    expect(err.detail).toBe(`1:${offset + 1} (${offset}): expression too large: a filter may hold at most 128 match clauses`);
    expect(err.position).toEqual({ line: 1, column: offset + 1, offset });
    expect(err.expected).toEqual(['at most 128 match clauses']);
  });
});

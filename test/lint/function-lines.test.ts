// Goal: the house's function-size rule counts a function from its first line to its last, exempts only
// the callbacks handed to a test framework's describe/it (however chained), and still counts helpers.
import { RuleTester } from 'eslint';
import { describe, it } from 'vitest';
import tseslint from 'typescript-eslint';
import functionLines from '../../eslint/function-lines.js';

RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

const body = (lines: number) => Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`).join('\n');
const fn = (name: string, lines: number) => `function ${name}() {\n${body(lines)}\n}`;
const options = [{ max: 5, exemptCallees: ['describe', 'it'] }];

new RuleTester({ languageOptions: { parser: tseslint.parser } }).run('house/function-lines', functionLines, {
  valid: [
    { code: fn('five', 5), options },
    { code: `describe('x', () => {\n${body(10)}\n});`, options },
    { code: `it.each([1])('x %s', (n: number) => {\n${body(10)}\n});`, options },
    { code: `describe.skip('x', function () {\n${body(10)}\n});`, options },
  ],
  invalid: [
    { code: fn('six', 6), options, errors: [{ messageId: 'tooLong', data: { name: "Function 'six'", lines: 6, max: 5 } }] },
    { code: `run(() => {\n${body(6)}\n});`, options, errors: [{ messageId: 'tooLong' }] },
    // exempt only without exemptCallees: the same describe callback counts
    { code: `describe('x', () => {\n${body(6)}\n});`, options: [{ max: 5 }], errors: [{ messageId: 'tooLong' }] },
    // a helper inside a describe is still a helper
    { code: `describe('x', () => {\n${fn('helper', 6)}\n});`, options, errors: [{ messageId: 'tooLong' }] },
    {
      code: `class A {\n  method() {\n${body(6)}\n  }\n}`,
      options,
      errors: [{ messageId: 'tooLong', data: { name: "Function 'method'", lines: 6, max: 5 } }],
    },
  ],
});

// Goal: the house's function-size rule counts a function from its first line to its last, exempts only
// the callbacks handed to the named callees (however chained) — the test files name `describe` alone —
// and still counts test bodies (it/test), hooks and helpers.
import { RuleTester } from 'eslint';
import { describe, it } from 'vitest';
import tseslint from 'typescript-eslint';
import functionLines from '../../eslint/function-lines.js';

RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

const body = (lines: number) => Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`).join('\n');
const fn = (name: string, lines: number) => `function ${name}() {\n${body(lines)}\n}`;
// As eslint.config.js configures test files: a describe callback is a container of test cases, not logic.
const options = [{ max: 5, exemptCallees: ['describe'] }];

new RuleTester({ languageOptions: { parser: tseslint.parser } }).run('house/function-lines', functionLines, {
  valid: [
    { code: fn('five', 5), options },
    { code: `describe('x', () => {\n${body(10)}\n});`, options },
    { code: `describe.skip('x', function () {\n${body(10)}\n});`, options },
    { code: `describe.each([1])('x %s', (n: number) => {\n${body(10)}\n});`, options },
    { code: `describe.skipIf(process.env.CI)('x', () => {\n${body(10)}\n});`, options },
    { code: `describe.sequential('x', () => {\n${body(10)}\n});`, options },
    { code: `describe.concurrent('x', () => {\n${body(10)}\n});`, options },
    { code: `it('x', () => {\n${body(5)}\n});`, options },
    // any callee can be named: chained calls of it are exempt the same way
    { code: `it.each([1])('x %s', (n: number) => {\n${body(10)}\n});`, options: [{ max: 5, exemptCallees: ['it'] }] },
  ],
  invalid: [
    { code: fn('six', 6), options, errors: [{ messageId: 'tooLong', data: { name: "Function 'six'", lines: 6, max: 5 } }] },
    { code: `run(() => {\n${body(6)}\n});`, options, errors: [{ messageId: 'tooLong' }] },
    // exempt only without exemptCallees: the same describe callback counts
    { code: `describe('x', () => {\n${body(6)}\n});`, options: [{ max: 5 }], errors: [{ messageId: 'tooLong' }] },
    // a test's body counts, however the call is chained
    { code: `it('x', () => {\n${body(6)}\n});`, options, errors: [{ messageId: 'tooLong' }] },
    { code: `it.each([1])('x %s', (n: number) => {\n${body(6)}\n});`, options, errors: [{ messageId: 'tooLong' }] },
    { code: `test.skipIf(process.env.CI)('x', async () => {\n${body(6)}\n});`, options, errors: [{ messageId: 'tooLong' }] },
    // so does a hook's
    { code: `beforeEach(() => {\n${body(6)}\n});`, options, errors: [{ messageId: 'tooLong' }] },
    { code: `afterAll(async function () {\n${body(6)}\n});`, options, errors: [{ messageId: 'tooLong' }] },
    // a test inside a describe is counted, its describe is not
    { code: `describe('x', () => {\n  it('y', () => {\n${body(6)}\n  });\n});`, options, errors: [{ messageId: 'tooLong', line: 2 }] },
    // a helper inside a describe is still a helper
    { code: `describe('x', () => {\n${fn('helper', 6)}\n});`, options, errors: [{ messageId: 'tooLong' }] },
    {
      code: `class A {\n  method() {\n${body(6)}\n  }\n}`,
      options,
      errors: [{ messageId: 'tooLong', data: { name: "Function 'method'", lines: 6, max: 5 } }],
    },
  ],
});

/**
 * The house rules `npm run lint` checks (test/lint/house.test.ts runs them under `npm test` too): file and
 * function size, and a few cheap correctness rules. Kept small on purpose: every rule here passes on the
 * whole tree, so a new violation is a real one. Types are not used (no `parserOptions.project`): the
 * rules are syntactic and the run stays fast; `npm run typecheck` does the type checking.
 *
 * Sizes count every line, blank lines and comments included (skipBlankLines/skipComments off): the
 * figures are the ones `wc -l` shows, which is how the limits are stated and measured.
 */
import tseslint from 'typescript-eslint';
import functionLines from './eslint/function-lines.js';
import recordKeys from './eslint/record-keys.js';
import timerDelay from './eslint/timer-delay.js';

/**
 * Files allowed past 400 lines because their length is data, not logic (generated code or one table
 * a reader scans row by row). Each entry says why. None qualifies today.
 */
const sizeExempt = [];

/**
 * A callback passed to `describe` (or `describe.each`, `.skipIf`, `.sequential`, …) is a container of test
 * cases, not logic, and is exempt from the function size. The bodies of `it`/`test`, of the hooks and of
 * helpers count like any function.
 */
const testCallees = ['describe'];

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'ui/dist/**', 'bench/results/**', 'deploy/**', 'docs/**', 'proto/**'] },
  {
    files: ['**/*.ts', '**/*.mjs', '**/*.js'],
    languageOptions: { parser: tseslint.parser, ecmaVersion: 2023, sourceType: 'module' },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { '@typescript-eslint': tseslint.plugin, house: { rules: { 'function-lines': functionLines, 'record-keys': recordKeys, 'timer-delay': timerDelay } } },
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
      'house/function-lines': ['error', { max: 70 }],
      'house/record-keys': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none', caughtErrors: 'none', ignoreRestSiblings: true }],
      'no-dupe-keys': 'error',
      'no-dupe-class-members': 'off',
      'no-duplicate-case': 'error',
      'no-self-assign': 'error',
      'no-self-compare': 'error',
      'no-unreachable': 'error',
      'no-unsafe-finally': 'error',
      'no-debugger': 'error',
      'no-control-regex': 'error',
      'no-cond-assign': ['error', 'except-parens'],
      'no-constant-condition': ['error', { checkLoops: false }],
      'no-empty-pattern': 'error',
      'no-sparse-arrays': 'error',
      'no-unsafe-negation': 'error',
      'use-isnan': 'error',
      'valid-typeof': 'error',
      'no-var': 'error',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // The agent and the command line take durations from configuration and clients: a timer's delay is
    // either bounded by a constant or goes through setLongTimeout, the one file that arms the rest.
    files: ['src/**/*.ts', 'cluster/**/*.ts'],
    ignores: ['src/util/timer.ts'],
    rules: { 'house/timer-delay': 'error' },
  },
  {
    files: ['test/**/*.ts'],
    // Tests key objects by names they choose themselves.
    rules: { 'house/function-lines': ['error', { max: 70, exemptCallees: testCallees }], 'house/record-keys': 'off' },
  },
  ...(sizeExempt.length > 0 ? [{ files: sizeExempt, rules: { 'max-lines': 'off' } }] : []),
);

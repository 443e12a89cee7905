/**
 * The import-graph rules `npm run lint` checks (and test/lint/house.test.ts, so `npm test` checks them too).
 * Type-only imports are part of the graph (tsPreCompilationDeps): a cycle through `import type` still
 * ties the two modules together for a reader and for the compiler.
 *
 * Run by hand: npx depcruise src cluster machines bench ui/src bin --config .dependency-cruiser.cjs
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Layers import one way; a cycle (type-only included) means two modules are one in disguise.',
      from: { path: '^(src|cluster|machines|bench|ui/src|bin)/' },
      to: { circular: true },
    },
    {
      name: 'cluster-imports-src-index-only',
      severity: 'error',
      comment: 'cluster/ is an adapter: it sees src/ only through the public index module of each folder.',
      from: { path: '^cluster/' },
      to: { path: '^src/', pathNot: '^src/[^/]+/index\\.ts$' },
    },
    {
      name: 'bench-not-test',
      severity: 'error',
      comment: 'The benches are tools of their own: what they share with the tests lives in src/ or bench/support/.',
      from: { path: '^bench/' },
      to: { path: '^test/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that resolves to nothing is a typo or a missing dependency.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.mjs', '.js', '.cjs', '.json', '.d.ts'],
    },
    skipAnalysisNotInRules: true,
  },
};

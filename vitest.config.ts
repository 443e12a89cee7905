import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

/**
 * The suites that also run on the other Node.js LTS lines (`npm run test:lts`), chosen by one rule: the code
 * they test runs in the test process (or in processes it starts on the Node under test) and does not load
 * the uWebSockets.js binding, which this host's glibc cannot load on Node 22/24. That is the unit and
 * middle layers (machines, state and runtime, the WAL and memory log, probes, filters, auth, metrics, gRPC
 * health, the cluster's JetStream log and gossip membership, the simulator and checker) and the `roster`
 * command; the agents the CLI suites talk to run on ROSTER_TEST_AGENT_NODE (test/support/agent.ts).
 * Left out: the suites whose subject is the agent process (http, cluster start-ups, faults, ui, build,
 * deploy, bench profiling) — the Node under test would not be the one the agent runs on — and the checks
 * of the repository's files (lint, docs), which do not depend on the Node that runs them.
 */
const portableInclude = [
  'test/{auth,checker,cli,filter,grpc,log,machines,metrics,ports,probes,sim,state,util}/**/*.test.ts',
  'test/cluster/{jetstream,membership}*.test.ts',
  'test/http/*.unit.test.ts',
  'test/bench/options.test.ts',
];

// `npm test` runs `main` (three files at a time; alone: `npm run test:main`) and then `faults` (test/faults
// one file at a time; alone: `npm run test:faults`) — each fault file starts three nats-servers and three
// Roster nodes, kills and pauses them, and on a two-core machine must not share the cores with another such
// file or with the main suite's timing-sensitive tests.
// `portable` (files that `main` runs too) exists only when ROSTER_TEST_PORTABLE is set, as `npm run test:lts`
// sets it: defined always, `npm test` and every `vitest run <file>` would run those files twice.
const projects: TestProjectInlineConfiguration[] = [
  {
    extends: true,
    // Three workers on two cores: most of these files wait on real timers (TTLs, lock-delays, probe
    // intervals, agent starts), so a third file overlaps those waits; vitest's default is cores - 1.
    test: {
      name: 'main', include: ['test/**/*.test.ts'], exclude: ['test/faults/**'], maxWorkers: 3,
      sequence: { groupOrder: 0 },
    },
  },
  {
    extends: true,
    test: { name: 'faults', include: ['test/faults/**/*.test.ts'], fileParallelism: false, sequence: { groupOrder: 1 } },
  },
];
if (process.env.ROSTER_TEST_PORTABLE) {
  projects.push({ extends: true, test: { name: 'portable', include: portableInclude, maxWorkers: 3, sequence: { groupOrder: 2 } } });
}

// With CI set, a JSON report for .ci/run's closing line: `.vitest-report.json`, or the file ROSTER_TEST_REPORT
// names (`npm run test:lts` writes one per Node line).
const report = process.env.ROSTER_TEST_REPORT || '.vitest-report.json';

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: process.env.CI ? ['default', ['json', { outputFile: report }]] : ['default'],
    projects,
  },
});

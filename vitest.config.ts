import { defineConfig } from 'vitest/config';

// Two projects, both run by `npm test`: `main` (three files at a time; alone: `npm run test:main`) and then
// `faults` (test/faults one file at a time; alone: `npm run test:faults`) — each fault file starts three
// nats-servers and three Roster nodes, kills and pauses them, and on a two-core machine must not share
// the cores with another such file or with the main suite's timing-sensitive tests.
export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.vitest-report.json' }]] : ['default'],
    projects: [
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
    ],
  },
});

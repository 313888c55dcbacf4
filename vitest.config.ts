import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // CI reads the JSON report for its summary line
    reporters: ['default', ['json', { outputFile: 'test-results/vitest.json' }]],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          globalSetup: ['test/support/scratch-setup.ts'],
          // one module graph for all files: loading it again per file was half the suite's time
          isolate: false,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/scratch-setup.ts'],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/e2e/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          // files run one after another anyway; sharing the module graph saves ~1.5 s a file
          isolate: false,
        },
      },
      {
        test: {
          name: 'containers',
          include: ['test/containers/**/*.test.ts'],
          globalSetup: ['test/containers/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'node',
          include: ['test/node/**/*.test.ts'],
          globalSetup: ['test/node/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
          // a group of its own, so it never runs beside another suite (two cores); e2e and
          // containers, sequential with the default order, run after the groups
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'gitops',
          include: ['test/gitops/**/*.test.ts'],
          globalSetup: ['test/gitops/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});

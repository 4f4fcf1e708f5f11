/**
 * Three projects (README "Tests"):
 *  - unit: pure tests, in parallel, no stack (`npm run test:unit`);
 *  - workflows: workflow code against mocked activities on a Temporal server each file starts, the workflow
 *    bundle built once by the global setup (`npm run test:workflows`);
 *  - integration: the real stack (Temporal, anvil chains, doubles) started once per Jest by the global
 *    setup, suites one at a time because they share chains and relayer keys; `npm run test:integration`
 *    runs shards side by side, each a Jest with its own stack (scripts/test-integration.js);
 *  - cluster (`npm run test:cluster`, not in `npm test`): `npm run cluster`'s topology, started once.
 */
const common = { testEnvironment: 'node', transform: { '^.+\\.(t|j)s$': ['@swc/jest'] } };

module.exports = {
  testTimeout: 120000,
  // npm run test:integration runs shards side by side (scripts/test-integration.js), split by this.
  testSequencer: '<rootDir>/test/support/shard-sequencer.js',
  // CI's log lists each file's wall time (test/support/durations-reporter.js).
  reporters: process.env.CI ? ['default', '<rootDir>/test/support/durations-reporter.js'] : ['default'],
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'workflows',
      testMatch: ['<rootDir>/test/workflows/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/workflows-global-setup.ts',
      globalTeardown: '<rootDir>/test/support/workflows-global-teardown.ts',
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      setupFilesAfterEnv: ['<rootDir>/test/support/chains-mining.ts'],
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
    {
      // `npm run test:cluster`, not part of `npm test`: the same behaviour on `npm run cluster` (the
      // Temporal server on PostgreSQL, two workers, two APIs, Redis), started once by the global setup.
      ...common,
      displayName: 'cluster',
      testMatch: ['<rootDir>/test/cluster/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/cluster-setup.ts',
      globalTeardown: '<rootDir>/test/support/cluster-teardown.ts',
    },
  ],
};

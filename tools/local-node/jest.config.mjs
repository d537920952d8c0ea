import { jestConfig } from '../../jest.preset.mjs';

export default jestConfig(import.meta.dirname, {
  // One control plane for the whole run, started by the harness (libs/testing).
  globalSetup: '@kruntimes/testing/jest-global-setup',
  globalTeardown: '@kruntimes/testing/jest-global-teardown',
  testTimeout: 120_000,
  // The integration tests share 2 cores with a control plane: one file at a time.
  maxWorkers: 1,
});

import { jestConfig } from '../../jest.preset.mjs';

export default jestConfig(import.meta.dirname, {
  // One control plane for the whole run (see src/jest/global-setup.ts).
  globalSetup: '<rootDir>/src/jest/global-setup.mjs',
  globalTeardown: '<rootDir>/src/jest/global-teardown.mjs',
  testTimeout: 60_000,
});

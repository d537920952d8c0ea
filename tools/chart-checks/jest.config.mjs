import { jestConfig } from '../../jest.preset.mjs';

export default jestConfig(import.meta.dirname, {
  globalSetup: `${import.meta.dirname}/jest-global-setup.mjs`,
  testTimeout: 60_000,
});

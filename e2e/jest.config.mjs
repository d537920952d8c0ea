import { join } from 'node:path';
import { jestConfig } from '../jest.preset.mjs';

const workspaceRoot = join(import.meta.dirname, '..');

/**
 * Every `*.int.test.ts` of the workspace in one jest run: one control plane (the
 * harness's global setup) shared by all, a namespace per test. Files run one at a time:
 * the control plane, the local node agent's Pods and the test share two cores.
 */
export default jestConfig(import.meta.dirname, {
  rootDir: workspaceRoot,
  roots: ['<rootDir>/libs', '<rootDir>/apps', '<rootDir>/tools', '<rootDir>/e2e'],
  testMatch: ['**/*.int.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: '@kruntimes/testing/jest-global-setup',
  globalTeardown: '@kruntimes/testing/jest-global-teardown',
  testTimeout: 120_000,
  maxWorkers: 1,
});

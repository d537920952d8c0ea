// Shared jest settings: ESM TypeScript through ts-jest (type-checking happens in the
// separate `typecheck` target, so tests transpile only and stay fast).
/** @param {string} projectDir @returns {import('jest').Config} */
export function jestConfig(projectDir, overrides = {}) {
  return {
    rootDir: projectDir,
    testEnvironment: 'node',
    reporters: ['default', `${import.meta.dirname}/tools/ci/jest-results-reporter.mjs`],
    extensionsToTreatAsEsm: ['.ts'],
    moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
    // ts-jest rewrites relative `.ts` imports to `.js` (rewriteRelativeImportExtensions);
    // map them back to the sources.
    moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
    testMatch: ['<rootDir>/src/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
    // Integration tests (`*.int.test.ts`, against the real control plane) all run in the
    // `integration` project (e2e/), so one test run starts one control plane.
    testPathIgnorePatterns: ['/node_modules/', '\\.int\\.test\\.ts$'],
    transform: {
      '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: `${projectDir}/tsconfig.json` }],
    },
    ...overrides,
  };
}

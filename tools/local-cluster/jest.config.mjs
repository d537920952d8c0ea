import { jestConfig } from '../../jest.preset.mjs';

// The test starts the command itself, which starts its own control plane.
export default jestConfig(import.meta.dirname, { testTimeout: 120_000 });

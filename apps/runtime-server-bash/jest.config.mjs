import { jestConfig } from '../../jest.preset.mjs';

// Integration tests start the real server and real Bash processes.
export default jestConfig(import.meta.dirname, { testTimeout: 60_000 });

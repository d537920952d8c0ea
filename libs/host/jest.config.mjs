import { jestConfig } from '../../jest.preset.mjs';

// These tests start real processes (Node.js loading a service, process groups); on a busy
// 2-core machine that alone can take longer than jest's default 5 s. Each spawn has its
// own kill bound, so a hung test still ends.
export default jestConfig(import.meta.dirname, { testTimeout: 60_000 });

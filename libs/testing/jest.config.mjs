import { jestConfig } from '../../jest.preset.mjs';

// Unit tests only; this lib's integration tests run in the `integration` project (e2e/).
export default jestConfig(import.meta.dirname);

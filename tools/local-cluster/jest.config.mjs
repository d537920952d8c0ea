import { jestConfig } from '../../jest.preset.mjs';

// Unit tests only; the integration tests run in the `integration` project (e2e/).
export default jestConfig(import.meta.dirname);

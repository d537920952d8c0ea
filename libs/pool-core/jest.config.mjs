import { jestConfig } from '../../jest.preset.mjs';

export default jestConfig(import.meta.dirname);

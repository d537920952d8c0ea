import { jestConfig } from '../../jest.preset.mjs';

// runtimed's behaviour is tested in apps/runtimed/test/*.int.test.ts (the integration
// project) and in libs/runtimed-core; main.ts is wiring only.
export default jestConfig(import.meta.dirname, { passWithNoTests: true });

// Bash Runtime Server: wiring only (see @kruntimes/runtime-server-core).
import { runRuntimeServerMain } from '@kruntimes/runtime-server-core';
import { BashAdapter } from './bash-adapter.ts';

await runRuntimeServerMain('runtime-server-bash', () => Promise.resolve(new BashAdapter()));

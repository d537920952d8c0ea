// Bash Runtime Server: wiring only (see @kruntimes/runtime-server-core).
import { runRuntimeServerMain } from '@kruntimes/runtime-server-core';
import { installArtifactCommand } from './artifact-command.ts';
import { BashAdapter } from './bash-adapter.ts';

await runRuntimeServerMain('runtime-server-bash', async () => new BashAdapter(await installArtifactCommand()));

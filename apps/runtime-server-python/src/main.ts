// Python Runtime Server: wiring only (see @kruntimes/runtime-server-core).
import { runRuntimeServerMain } from '@kruntimes/runtime-server-core';
import { PythonAdapter, resolvePython } from './python-adapter.ts';

await runRuntimeServerMain('runtime-server-python', (logger) => {
  const python = resolvePython();
  logger.info({ python }, 'python interpreter');
  return Promise.resolve(new PythonAdapter(python));
});

// Python Runtime Server: wiring only (see @kruntimes/runtime-server-core).
import { runRuntimeServerMain } from '@kruntimes/runtime-server-core';
import { PythonAdapter, resolvePython } from './python-adapter.ts';

await runRuntimeServerMain('runtime-server-python', (logger) => {
  const python = resolvePython();
  logger.info({ python }, 'python interpreter');
  // KRT_PYTHON_SPARE_WORKER=0: no function worker started ahead (one idle interpreter less, registrations start cold).
  return Promise.resolve(new PythonAdapter(python, { spareWorker: process.env.KRT_PYTHON_SPARE_WORKER !== '0' }));
});

// No process may outlive the test run: when the harness process dies without stopping
// what it started (SIGKILL here, the worst case), the watchdog sidecar cleans up.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../src/wait.ts';
import { isRunning } from './support/processes.ts';

const FIXTURE = fileURLToPath(new URL('fixtures/abandon-processes.ts', import.meta.url));

test('a SIGKILLed harness leaves no process and no directory behind', async () => {
  const harness = spawn(process.execPath, ['--no-warnings', FIXTURE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => harness.once('exit', resolve));
  const reported = once(createInterface({ input: harness.stdout }), 'line') as Promise<[string]>;
  const [line] = await Promise.race([
    reported,
    exited.then(() => {
      throw new Error('the fixture exited before reporting what it started');
    }),
  ]);
  const started = JSON.parse(line) as { pid: number; dir: string; watchdog: number };
  expect(isRunning(started.pid)).toBe(true);
  expect(existsSync(started.dir)).toBe(true);

  harness.kill('SIGKILL');
  await exited;

  await waitFor(
    'the watchdog to stop the abandoned process and remove its directory',
    () => Promise.resolve(!isRunning(started.pid) && !existsSync(started.dir) && !isRunning(started.watchdog) ? true : undefined),
    { timeoutMs: 10_000, intervalMs: 50 },
  );
});

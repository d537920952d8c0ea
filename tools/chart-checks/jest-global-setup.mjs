// Builds helm from its Go module before any test runs (minutes on a fresh machine, a
// verification later), so that no test's timeout has to cover the build.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export default function buildHelm() {
  const cacheRoot = process.env.KRT_HELM_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'kruntimes');
  mkdirSync(cacheRoot, { recursive: true });
  const script = join(import.meta.dirname, 'scripts', 'build-helm.sh');
  const options = { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' };
  let result = spawnSync('flock', [join(cacheRoot, 'helm.lock'), script], options);
  if (result.error?.code === 'ENOENT') {
    process.stderr.write('[helm] flock(1) not found; building without a lock\n');
    result = spawnSync(script, [], options);
  }
  if (result.error !== undefined || result.status !== 0)
    throw new Error(`${script} failed: ${result.error?.message ?? `exit code ${result.status}`}`);
}

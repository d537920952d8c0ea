// The local development environment: `node tools/local-cluster/src/dev.ts up|down|status|env|logs`
// (also `npm run dev` and `krt dev ...`; see DEV_USAGE and the README).
import { join, resolve } from 'node:path';
import { REPO_ROOT } from '@kruntimes/testing';
import { down, env, logs, status } from './dev-commands.ts';
import { DEV_USAGE, parseDevArgs } from './dev-options.ts';
import { UsageError } from './options.ts';

const line = (text: string): void => {
  process.stdout.write(`${text}\n`);
};

async function main(): Promise<number> {
  const defaultDir = process.env.KRT_DEV_DIR ?? join(REPO_ROOT, 'tmp/dev');
  const options = parseDevArgs(process.argv.slice(2), defaultDir);
  switch (options.subcommand) {
    case 'up':
      // Loaded only here: the services' rule constants pull in much more than the other subcommands need.
      return (await import('./dev-up.ts')).up({
        dir: options.dir,
        dirFlag: options.dir !== resolve(defaultDir),
        once: options.once,
        prometheus: !options.noPrometheus,
        jaeger: !options.noJaeger,
        out: line,
      });
    case 'down':
      return down(options.dir, line);
    case 'status':
      return status(options.dir, line);
    case 'env':
      return env(options.dir, line);
    case 'logs':
      return logs(options.dir, options.target, (text) => process.stdout.write(text));
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      if (error.message === '') process.stdout.write(`${DEV_USAGE}\n`);
      else process.stderr.write(`${error.message}\n\n${DEV_USAGE}\n`);
      process.exitCode = error.message === '' ? 0 : 2;
      return;
    }
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);

import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { KruntimesError } from '@kruntimes/errors';
import { baseEnv } from '@kruntimes/runtime-server-core';
import type { FunctionConfig, FunctionSpec, LanguageAdapter, LoadedFunction, TaskCommand } from '@kruntimes/runtime-server-core';
import { userPath } from './artifact-command.ts';
import { BashFunction } from './bash-function.ts';

const execFileAsync = promisify(execFile);

/** `function` (in main.sh) or `path/to/script.sh:function`. */
const HANDLER = /^(?:((?:[\w.-]+\/)*[\w.-]+\.sh):)?([A-Za-z_]\w*)$/;

export function parseHandler(handler: string): { script: string; fn: string } | undefined {
  const match = HANDLER.exec(handler);
  if (match === null || handler.includes('..')) return undefined;
  return { script: match[1] ?? 'main.sh', fn: match[2] ?? '' };
}

export class BashAdapter implements LanguageAdapter {
  readonly language = 'bash';
  readonly #binDir: string | undefined;

  /** `binDir`: holds `krt-artifact` and `krt-input` (installArtifactCommand), put first on the PATH of tasks. */
  constructor(binDir?: string) {
    this.#binDir = binDir;
  }

  prepare(config: FunctionConfig): void {
    if (parseHandler(config.handler) === undefined) {
      throw new KruntimesError('InvalidRequest', `handler ${JSON.stringify(config.handler)} is not function or script.sh:function`);
    }
  }

  /** Checks that the script parses and defines the function; nothing stays running. */
  async register(spec: FunctionSpec): Promise<LoadedFunction> {
    const parsed = parseHandler(spec.handler);
    if (parsed === undefined) throw new KruntimesError('InvalidRequest', `invalid handler ${spec.handler}`);
    const script = resolve(spec.workdir, parsed.script);
    try {
      await execFileAsync('bash', ['--noprofile', '--norc', '-n', script], { ...spec.sandbox.identity, timeout: 10_000 });
      await execFileAsync(
        'bash',
        [
          '--noprofile',
          '--norc',
          '-c',
          'source -- "$1" </dev/null >/dev/null 2>&1; declare -F -- "$2" >/dev/null',
          'krt-check',
          script,
          parsed.fn,
        ],
        // The check sources user code: as the registration's user, never the server's.
        { cwd: spec.workdir, env: { ...baseEnv(), ...spec.sandbox.env, ...spec.env }, ...spec.sandbox.identity, timeout: 10_000 },
      );
    } catch (error) {
      const stderr = (error as { stderr?: string }).stderr?.trim() ?? '';
      throw new KruntimesError(
        'FunctionFailed',
        `cannot load handler ${spec.handler}: ${stderr === '' ? `${parsed.script} does not define ${parsed.fn}` : stderr}`,
        { cause: error },
      );
    }
    // What the sourced script started must not live on into the first invocation.
    await spec.sandbox.endProcesses();
    return new BashFunction(spec, script, parsed.fn);
  }

  taskCommand(entrypoint: string, args: readonly string[], env: Readonly<Record<string, string>>): TaskCommand {
    return {
      command: 'bash',
      args: ['--noprofile', '--norc', entrypoint, ...args],
      ...(this.#binDir === undefined ? {} : { env: { PATH: userPath(this.#binDir, env) } }),
    };
  }
}

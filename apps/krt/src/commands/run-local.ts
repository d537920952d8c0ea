import { readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import type { RuntimeLanguage } from '@kruntimes/api';
import { createRunDir, executeLocally, lockDigest, parseRunFile, pinInputs, resolveLanguage } from '@kruntimes/local-run-core';
import { pino } from 'pino';
import type { GlobalFlags, RunLocalCommandLine } from '../args.ts';
import { CliError, EXIT, usageError } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import { loadKubeConfig, resolveNamespace } from '../kube.ts';
import { workspaceEntry } from '../workspace.ts';
import type { CliIo } from './context.ts';

/** The repository's Runtime Server of a language (krt runs from a clone, like `npm run dev`). */
function runtimeServerMain(language: RuntimeLanguage): string {
  return workspaceEntry(new URL(`../../../runtime-server-${language}/src/main.ts`, import.meta.url), 'krt run --local');
}

/**
 * `krt run --local -f FILE`: reads and checks the run file, pins its inputs against the
 * lock (the cluster is read only to lock a ConfigMap source, with the user's
 * kubeconfig), runs the task through local-run-core and reports. The task's lines go to
 * stdout and stderr as it prints them; krt's own lines to stderr.
 */
export async function runLocalCommand(command: RunLocalCommandLine, global: GlobalFlags, io: CliIo): Promise<ExitCode> {
  const text = await readFile(command.file, 'utf8').catch((error: unknown) => {
    throw usageError(`cannot read ${command.file}: ${(error as Error).message}`);
  });
  const runFile = parseRunFile(text, command.file);
  const language = resolveLanguage(runFile.spec.runtime, command.language);
  // Before anything is pinned or written: a krt without the repository cannot run it.
  const runtimeServer = runtimeServerMain(language);
  const pinned = await pinInputs({
    runFilePath: command.file,
    runFile,
    language,
    namespace: global.namespace,
    updateLock: command.updateLock,
    readConfigMap: async (namespace, name, key) => {
      const kubeConfig = loadKubeConfig(global.kubeconfig);
      const ns = namespace ?? resolveNamespace(kubeConfig, undefined);
      try {
        const configMap = await kubeConfig.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: ns, name });
        const value = configMap.data?.[key];
        if (value === undefined) throw new CliError(EXIT.notFound, `ConfigMap ${ns}/${name} has no key ${key}`);
        return { namespace: ns, text: value };
      } catch (error) {
        if (error instanceof ApiException && error.code === 404)
          throw new CliError(EXIT.notFound, `ConfigMap ${ns}/${name} not found`, { cause: error });
        throw error;
      }
    },
  });
  const digest = lockDigest(pinned.lock);
  io.stderr.write(`lock ${pinned.how}: ${relative(process.cwd(), pinned.lockFile)} (${digest})\n`);

  const { runId, runDir } = await createRunDir(command.file, runFile, pinned.lock, Date.now());
  // krt's own log of the run (grants, the Runtime Server's tail on a failure); never a token or URL.
  const logger = pino({ name: 'krt-local', level: 'info' }, pino.destination({ dest: join(runDir, 'krt.log'), sync: true }));

  const abort = new AbortController();
  const onSignal = (): void => {
    io.stderr.write('stopping the task (Ctrl-C again to leave krt at once)\n');
    abort.abort();
    process.once('SIGINT', () => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  try {
    const status = await executeLocally({
      runFile,
      language,
      source: pinned.source,
      runId,
      runDir,
      runtimeServer: { node: process.execPath, main: runtimeServer },
      logger,
      signal: abort.signal,
      onLine: (stream, line) => {
        (stream === 'stdout' ? io.stdout : io.stderr).write(`${line}\n`);
      },
    });
    const outputs = status.outputs === undefined ? '' : `; outputs ${JSON.stringify(status.outputs)}`;
    const artifacts =
      status.artifacts === undefined
        ? ''
        : `; artifacts ${status.artifacts.map((a) => `${a.id} (${String(a.size)} bytes, ${a.digest})`).join(', ')}`;
    io.stderr.write(
      `local run ${runId}: ${status.phase ?? ''} (${status.reason ?? ''}${status.exitCode === undefined ? '' : `, exit code ${String(status.exitCode)}`}): ${status.message ?? ''}${outputs}${artifacts}\n` +
        `run directory: ${relative(process.cwd(), runDir) || '.'}\n`,
    );
    return status.phase === 'Succeeded' ? EXIT.ok : EXIT.functionError;
  } finally {
    process.removeListener('SIGINT', onSignal);
    logger.flush();
  }
}

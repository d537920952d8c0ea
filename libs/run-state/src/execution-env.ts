import type { EnvVar, RuntimeLanguage } from '@kruntimes/api';

/** The file the source is written to: the task entrypoint and the default handler module. */
export function entrypointFile(language: RuntimeLanguage): string {
  switch (language) {
    case 'python':
      return 'main.py';
    case 'bash':
      return 'main.sh';
  }
}

/** What runEnv reads of a Run (read-only: runtimed passes informer cache objects). */
export interface RunEnvSource {
  readonly metadata: { readonly name?: string; readonly namespace?: string; readonly uid?: string };
  readonly spec: { readonly env?: readonly Readonly<EnvVar>[] };
}

/**
 * The environment of the user's code: spec.env, then the KRT_* variables (which win).
 * runtimed on the cluster and `krt run --local` both build it here, so a task sees the
 * same variables in both places.
 */
export function runEnv(run: RunEnvSource, runtime: string, attempt: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const variable of run.spec.env ?? []) env[variable.name] = variable.value;
  env.KRT_RUN_NAME = run.metadata.name ?? '';
  env.KRT_RUN_NAMESPACE = run.metadata.namespace ?? '';
  env.KRT_RUN_UID = run.metadata.uid ?? '';
  env.KRT_RUNTIME = runtime;
  env.KRT_ATTEMPT = String(attempt);
  return env;
}

import { API_GROUP_VERSION, RUN_KIND, RUNTIME_LANGUAGES, isDns1123Subdomain } from '@kruntimes/api';
import type { Run, RunSpec, RuntimeLanguage } from '@kruntimes/api';
import { runSpecProblems } from '@kruntimes/crds';
import { KruntimesError } from '@kruntimes/errors';
import { parse } from 'yaml';

/** A task Run as `krt run --local` takes it from a run file. */
export interface LocalRunFile {
  name: string;
  namespace: string | undefined;
  spec: RunSpec;
}

/**
 * Reads a run file (one Run in YAML or JSON) and checks it the way the API server would
 * at create (the Run CRD's schema and CEL rules, with every bound of libs/api): any
 * problem, a function Run or a Run the platform recorded (spec.origin) is refused with an
 * InvalidRequest naming it, before anything runs.
 */
export function parseRunFile(text: string, file: string): LocalRunFile {
  let value: unknown;
  try {
    value = parse(text);
  } catch (error) {
    throw invalid(`${file} is not YAML: ${error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error)}`);
  }
  if (typeof value !== 'object' || value === null) throw invalid(`${file} does not hold a Run`);
  const run = value as Partial<Run> & { apiVersion?: unknown; kind?: unknown };
  if (run.apiVersion !== API_GROUP_VERSION || run.kind !== RUN_KIND) {
    throw invalid(`${file} must hold one Run (apiVersion: ${API_GROUP_VERSION}, kind: ${RUN_KIND})`);
  }
  const problems = runSpecProblems(run.spec);
  if (problems.length > 0) throw invalid(`${file} is not a valid Run: ${problems.join('; ')}`);
  const spec = run.spec;
  if (spec === undefined) throw invalid(`${file} has no spec`);
  if (spec.mode.task === undefined) {
    throw invalid(`${file} is a function Run: krt run --local runs task Runs only (a function is served through the gateway of a cluster)`);
  }
  if (spec.origin !== undefined) throw invalid(`${file} has spec.origin: it records a run made elsewhere, there is nothing to run`);
  if (spec.cancelRequested === true) throw invalid(`${file} has spec.cancelRequested: true`);
  const name = run.metadata?.name ?? 'local';
  if (!isDns1123Subdomain(name)) throw invalid(`${file}: metadata.name ${JSON.stringify(name)} is not a valid Run name`);
  const namespace = run.metadata?.namespace;
  return { name, namespace, spec };
}

/**
 * The language to run a task in. A Run names a Runtime (`spec.runtime`), which does not
 * exist locally: `--language` says which Runtime Server to start; without it, a Runtime
 * named literally `python` or `bash` is taken as that language.
 */
export function resolveLanguage(runtime: string, flag: string | undefined): RuntimeLanguage {
  const languages: readonly string[] = RUNTIME_LANGUAGES;
  if (flag !== undefined) {
    if (!languages.includes(flag)) throw invalid(`--language must be ${RUNTIME_LANGUAGES.join(' or ')}, not ${JSON.stringify(flag)}`);
    return flag as RuntimeLanguage;
  }
  if (languages.includes(runtime)) return runtime as RuntimeLanguage;
  throw invalid(
    `spec.runtime is ${JSON.stringify(runtime)}, a Runtime that does not exist locally: say which language it runs with --language ${RUNTIME_LANGUAGES.join('|')}`,
  );
}

function invalid(message: string): KruntimesError {
  return new KruntimesError('InvalidRequest', message, { terminal: true });
}

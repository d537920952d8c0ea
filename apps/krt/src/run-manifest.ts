import { basename, extname } from 'node:path';
import { API_GROUP, API_VERSION } from '@kruntimes/api';
import { parseAllDocuments } from 'yaml';
import type { NewRun } from './kube.ts';
import { usageError } from './exit-codes.ts';

/**
 * The Run to create from a manifest file (YAML or JSON, one document): kind Run of this API
 * version; its namespace, if it names one, must be the one krt works in; server-set fields
 * are dropped. The name: `--name`, else the manifest's, else its generateName, else one
 * generated from the file's name (`report.yaml` -> `report-xxxxx`).
 */
export function runFromManifest(text: string, options: { file: string; namespace: string; name?: string }): NewRun {
  const documents = parseAllDocuments(text).filter((document) => document.contents !== null);
  if (documents.length !== 1) throw usageError(`${options.file}: one Run per file, found ${String(documents.length)} documents`);
  const [document] = documents;
  if (document === undefined || document.errors.length > 0) {
    throw usageError(`${options.file}: not valid YAML: ${document?.errors[0]?.message.split('\n')[0] ?? 'empty'}`);
  }
  const value: unknown = document.toJS();
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw usageError(`${options.file}: not a Run manifest (an object)`);
  const manifest = value as { apiVersion?: unknown; kind?: unknown; metadata?: unknown; spec?: unknown };
  const apiVersion = `${API_GROUP}/${API_VERSION}`;
  if (manifest.kind !== 'Run') throw usageError(`${options.file}: kind must be Run, not ${JSON.stringify(manifest.kind ?? null)}`);
  if (manifest.apiVersion !== apiVersion) {
    throw usageError(`${options.file}: apiVersion must be ${apiVersion}, not ${JSON.stringify(manifest.apiVersion ?? null)}`);
  }
  if (typeof manifest.spec !== 'object' || manifest.spec === null) throw usageError(`${options.file}: a Run needs a spec`);
  const metadata = (typeof manifest.metadata === 'object' && manifest.metadata !== null ? manifest.metadata : {}) as Record<
    string,
    unknown
  >;
  if (metadata.namespace !== undefined && metadata.namespace !== options.namespace) {
    throw usageError(
      `${options.file} is for namespace ${JSON.stringify(metadata.namespace)}, krt works in "${options.namespace}" (give -n ${JSON.stringify(metadata.namespace)})`,
    );
  }
  const kept: NewRun['metadata'] = {};
  if (typeof metadata.labels === 'object' && metadata.labels !== null) kept.labels = metadata.labels as Record<string, string>;
  if (typeof metadata.annotations === 'object' && metadata.annotations !== null)
    kept.annotations = metadata.annotations as Record<string, string>;
  if (options.name !== undefined) kept.name = options.name;
  else if (typeof metadata.name === 'string' && metadata.name !== '') kept.name = metadata.name;
  else
    kept.generateName =
      typeof metadata.generateName === 'string' && metadata.generateName !== '' ? metadata.generateName : generateNameOf(options.file);
  return { apiVersion, kind: 'Run', metadata: kept, spec: manifest.spec } as NewRun;
}

/** `reports/nightly.yaml` -> `nightly-`; stdin or a name that cannot start a Run name -> `run-`. */
export function generateNameOf(file: string): string {
  if (file === '-') return 'run-';
  const stem = basename(file, extname(file))
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return /^[a-z0-9]/.test(stem) ? `${stem}-` : 'run-';
}

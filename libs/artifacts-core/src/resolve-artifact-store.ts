import { ApiException } from '@kubernetes/client-node';
import type { CoreV1Api } from '@kubernetes/client-node';
import { ARTIFACT_STORE_SECRET_KEYS, DEFAULTS } from '@kruntimes/api';
import type { ArtifactStore } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import type { ObjectApi } from '@kruntimes/run-client';
import type { ArtifactStoreCredentials, ArtifactStoreLocation } from './artifact-objects.ts';

export interface ResolvedArtifactStore {
  store: ArtifactStore;
  location: ArtifactStoreLocation;
  credentials: ArtifactStoreCredentials;
}

/** Why an ArtifactStore cannot be used, as the Ready condition's reason names it. */
export type ArtifactStoreProblem = 'StoreNotFound' | 'SecretNotFound' | 'SecretInvalid';

/** ArtifactStoreUnavailable with the problem that caused it, for a status condition. */
export class ArtifactStoreResolveError extends KruntimesError {
  readonly problem: ArtifactStoreProblem;

  constructor(problem: ArtifactStoreProblem, message: string, options: { cause?: unknown } = {}) {
    super('ArtifactStoreUnavailable', message, options);
    this.name = 'ArtifactStoreResolveError';
    this.problem = problem;
  }
}

/** The location an ArtifactStore's spec names, with the defaults applied. */
export function artifactStoreLocation(store: ArtifactStore): ArtifactStoreLocation {
  const { endpoint, bucket, prefix, region, forcePathStyle } = store.spec;
  return {
    endpoint,
    bucket,
    ...(prefix === undefined ? {} : { prefix }),
    region: region ?? DEFAULTS.artifactStoreRegion,
    forcePathStyle: forcePathStyle ?? true,
  };
}

/**
 * Reads the ArtifactStore `name` in `namespace` and its credentials Secret, with whatever
 * identity the API clients carry (runtimed's, the controller-manager's, a `krt` user's).
 */
export async function resolveArtifactStore(
  core: CoreV1Api,
  stores: Pick<ObjectApi<ArtifactStore>, 'get'>,
  namespace: string,
  name: string,
): Promise<ResolvedArtifactStore> {
  const what = `ArtifactStore ${namespace}/${name}`;
  let store: ArtifactStore | undefined;
  try {
    store = await stores.get(namespace, name);
  } catch (error) {
    throw resolveError(error, 'StoreNotFound', what);
  }
  if (store === undefined) throw new ArtifactStoreResolveError('StoreNotFound', `${what} not found`);
  return { store, location: artifactStoreLocation(store), credentials: await readCredentials(core, store) };
}

/** The credentials of an ArtifactStore already read (e.g. from an informer's cache). */
export async function readCredentials(
  core: Pick<CoreV1Api, 'readNamespacedSecret'>,
  store: ArtifactStore,
): Promise<ArtifactStoreCredentials> {
  const namespace = store.metadata.namespace ?? '';
  const secretName = store.spec.credentialsSecretRef.name;
  const what = `Secret ${namespace}/${secretName} (credentialsSecretRef of ArtifactStore ${store.metadata.name ?? ''})`;
  let data: Record<string, string> | undefined;
  try {
    data = (await core.readNamespacedSecret({ namespace, name: secretName })).data;
  } catch (error) {
    throw resolveError(error, 'SecretNotFound', what);
  }
  const value = (key: string): string => {
    const encoded = data?.[key];
    const decoded = encoded === undefined ? '' : Buffer.from(encoded, 'base64').toString('utf8');
    if (decoded === '') throw new ArtifactStoreResolveError('SecretInvalid', `${what} has no key ${key}`);
    return decoded;
  };
  return { accessKeyId: value(ARTIFACT_STORE_SECRET_KEYS.accessKeyId), secretAccessKey: value(ARTIFACT_STORE_SECRET_KEYS.secretAccessKey) };
}

function resolveError(error: unknown, notFound: ArtifactStoreProblem, what: string): KruntimesError {
  if (error instanceof ApiException && error.code === 404)
    return new ArtifactStoreResolveError(notFound, `${what} not found`, { cause: error });
  if (error instanceof ApiException && error.code === 403) {
    return new KruntimesError('Forbidden', `${what}: access denied (get ${notFound === 'StoreNotFound' ? 'artifactstores' : 'secrets'})`, {
      cause: error,
    });
  }
  const status = error instanceof ApiException ? ` (HTTP ${String(error.code)})` : '';
  return new KruntimesError('ArtifactStoreUnavailable', `cannot read ${what}${status}`, { cause: error });
}

import type { Condition, ObjectMeta } from './meta.ts';

export const ARTIFACT_STORE_KIND = 'ArtifactStore';
export const ARTIFACT_STORE_PLURAL = 'artifactstores';
export const ARTIFACT_STORE_SINGULAR = 'artifactstore';
export const ARTIFACT_STORE_SHORT_NAMES = ['kas'] as const;

/** An artifact ID (the last segment of its object key): a DNS-label-like name with dots and underscores. */
export const ARTIFACT_ID_PATTERN = '^[a-z0-9]([-a-z0-9._]*[a-z0-9])?$';
const artifactIdRegExp = new RegExp(ARTIFACT_ID_PATTERN);

/** A media type, `type/subtype` with optional parameters, as RFC 6838 restricts names. */
export const MEDIA_TYPE_PATTERN = '^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(;[ -~]{1,256})?$';

/** A SHA-256 digest as kruntimes writes it: `sha256:` and 64 lowercase hex digits. */
export const ARTIFACT_DIGEST_PATTERN = '^sha256:[0-9a-f]{64}$';
const sha256HexRegExp = /^[0-9a-f]{64}$/;

/** A bare SHA-256 as the manifest, the grants and the store client carry it: 64 lowercase hex digits. */
export function isSha256Hex(value: string): boolean {
  return sha256HexRegExp.test(value);
}

/** Keys of the credentials Secret an ArtifactStore names. */
export const ARTIFACT_STORE_SECRET_KEYS = { accessKeyId: 'accessKeyId', secretAccessKey: 'secretAccessKey' } as const;

export const ARTIFACT_STORE_CONDITION_TYPES = {
  /** The credentials Secret exists and holds both keys, and the bucket answered. */
  ready: 'Ready',
} as const;

export const ARTIFACT_STORE_REASONS = {
  storeReachable: 'StoreReachable',
  secretNotFound: 'SecretNotFound',
  secretInvalid: 'SecretInvalid',
  storeUnreachable: 'StoreUnreachable',
} as const;

export type ArtifactStoreReason = (typeof ARTIFACT_STORE_REASONS)[keyof typeof ARTIFACT_STORE_REASONS];

export interface SecretReference {
  name: string;
}

export interface ArtifactStoreSpec {
  /** Base URL of the S3-compatible API, e.g. `https://s3.example.com` (http only on loopback). */
  endpoint: string;
  bucket: string;
  /** Leading part of every object key; no leading or trailing slash. Default: none. */
  prefix?: string;
  /** Signing region. Default `us-east-1`. */
  region?: string;
  /** Path-style addressing (`endpoint/bucket/key`) instead of virtual hosts. Default true. */
  forcePathStyle?: boolean;
  /** A Secret in this namespace with `accessKeyId` and `secretAccessKey`. */
  credentialsSecretRef: SecretReference;
  /**
   * How long the objects of a deleted Run are kept, counted from their upload, as a
   * duration (`0s`, `24h`). Default `24h`.
   */
  retentionAfterRunDeleted?: string;
}

export interface ArtifactStoreStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  /** When the retention controller last finished a pass over the store. */
  lastCleanupTime?: string;
}

export interface ArtifactStore {
  apiVersion: 'kruntimes.io/v1alpha1';
  kind: 'ArtifactStore';
  metadata: ObjectMeta;
  spec: ArtifactStoreSpec;
  status?: ArtifactStoreStatus;
}

/** One file a task declares it produces. */
export interface DeclaredArtifact {
  id: string;
  /** Upper bound of its size in bytes; a grant for more is refused. */
  maxBytes: number;
  /** Its media type, e.g. `text/csv`; a grant for another is refused. */
  mediaType: string;
  /** An optional artifact may be missing from the manifest; a required one may not. Default false. */
  optional?: boolean;
}

/** `spec.artifacts` of a task Run. */
export interface RunArtifacts {
  /** Name of an ArtifactStore in the Run's namespace. */
  store: string;
  outputs: DeclaredArtifact[];
}

/** One verified artifact in `status.artifacts`: what the manifest said and the store confirmed. No URL. */
export interface ArtifactRecord {
  id: string;
  digest: string;
  size: number;
  mediaType: string;
}

/** `<prefix>/<namespace>/<run UID>/<attempt>/` with no prefix segment when the prefix is empty. */
export function artifactAttemptPrefix(storePrefix: string | undefined, namespace: string, runUid: string, attempt: number): string {
  return `${artifactRunPrefix(storePrefix, namespace, runUid)}${String(attempt)}/`;
}

/** `<prefix>/<namespace>/<run UID>/`: every attempt's objects of one Run. */
export function artifactRunPrefix(storePrefix: string | undefined, namespace: string, runUid: string): string {
  return `${artifactNamespacePrefix(storePrefix, namespace)}${runUid}/`;
}

/** `<prefix>/<namespace>/`: every Run's objects of one namespace. */
export function artifactNamespacePrefix(storePrefix: string | undefined, namespace: string): string {
  const prefix = storePrefix === undefined || storePrefix === '' ? '' : `${storePrefix}/`;
  return `${prefix}${namespace}/`;
}

/** The object key of one artifact of one attempt. */
export function artifactObjectKey(
  storePrefix: string | undefined,
  namespace: string,
  runUid: string,
  attempt: number,
  artifactId: string,
): string {
  return `${artifactAttemptPrefix(storePrefix, namespace, runUid, attempt)}${artifactId}`;
}

/** The parts of an object key under a namespace prefix, or undefined when it is not an artifact key. */
export function parseArtifactObjectKey(
  namespacePrefix: string,
  key: string,
): { runUid: string; attempt: number; artifactId: string } | undefined {
  if (!key.startsWith(namespacePrefix)) return undefined;
  const parts = key.slice(namespacePrefix.length).split('/');
  if (parts.length !== 3) return undefined;
  const [runUid, attemptText, artifactId] = parts as [string, string, string];
  if (runUid === '' || !/^[1-9][0-9]{0,9}$/.test(attemptText) || !artifactIdRegExp.test(artifactId)) return undefined;
  return { runUid, attempt: Number(attemptText), artifactId };
}

export function isArtifactId(value: string): boolean {
  return value.length <= 63 && artifactIdRegExp.test(value);
}

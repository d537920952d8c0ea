import type { Readable } from 'node:stream';

/**
 * What runtimed needs of one ArtifactStore's objects: presign one upload, look at and
 * hash one object, list and remove under a prefix: the part of @kruntimes/artifacts-core's
 * ArtifactObjects (the S3 client) that the grant and verification logic uses.
 */
export interface StoreObjects {
  presignUpload(
    key: string,
    upload: { size: number; sha256Hex: string; mediaType: string; expiresInSeconds: number },
  ): Promise<{ url: string; method: string; headers: Record<string, string>; expiresAt: Date }>;
  /** Undefined when there is no such object. */
  stat(key: string): Promise<{ size: number } | undefined>;
  /** Streams the object and hashes it, reading at most `maxBytes` (more is an error); undefined when there is no such object. */
  sha256(key: string, maxBytes: number): Promise<{ sha256Hex: string; size: number } | undefined>;
  /** The object's body as a stream (the caller consumes or destroys it); undefined when there is no such object. */
  download(key: string): Promise<Readable | undefined>;
  /** The objects under a prefix (bounded by the implementation). */
  list(prefix: string): AsyncIterable<{ key: string }>;
  remove(keys: readonly string[]): Promise<void>;
}

/** One ArtifactStore, resolved: its key prefix and its objects (credentials inside, never exposed). */
export interface ResolvedStore {
  prefix: string | undefined;
  objects: StoreObjects;
}

/** Reads an ArtifactStore and its credentials Secret; throws ArtifactStoreUnavailable. */
export type StoreResolver = (namespace: string, name: string) => Promise<ResolvedStore>;

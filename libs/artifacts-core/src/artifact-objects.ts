import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type * as S3 from '@aws-sdk/client-s3';
import type * as Presigner from '@aws-sdk/s3-request-presigner';
import { BOUNDS, MEDIA_TYPE_PATTERN, isSha256Hex } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';

/** Where an ArtifactStore's objects are: its spec with the defaults applied. */
export interface ArtifactStoreLocation {
  endpoint: string;
  bucket: string;
  /** Leading part of every key, no slashes at either end; undefined or '' for none. */
  prefix?: string;
  region: string;
  forcePathStyle: boolean;
}

export interface ArtifactStoreCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface UploadGrantRequest {
  /** Exact size of the body in bytes. */
  size: number;
  /** SHA-256 of the body, 64 lowercase hex digits. */
  sha256Hex: string;
  mediaType: string;
  expiresInSeconds: number;
}

/** A presigned PUT of exactly one body to exactly one key. */
export interface UploadGrant {
  url: string;
  method: 'PUT';
  /** The headers to send, exactly: each is part of the signature. */
  headers: Record<string, string>;
  expiresAt: Date;
}

export interface ObjectStat {
  size: number;
  lastModified: Date;
  contentType: string | undefined;
}

export interface ListedObject {
  key: string;
  size: number;
  lastModified: Date;
}

export interface ArtifactObjectsOptions {
  /** Bound on one request (a download: until its headers). Default 30 s. */
  requestTimeoutMs?: number;
  /** Attempts per request, the SDK's own retries included. Default 3. */
  maxAttempts?: number;
  /** Bound on the keys one list() yields. Default 100 000. */
  maxListedKeys?: number;
}

/**
 * The headers a grant signs (lowercase, as sent). `if-none-match: *` makes every grant
 * create-only: the store refuses (412) a PUT to a key that holds an object, so no grant
 * (another one for the same key, or the same one again while it is valid) can overwrite an
 * object once written, e.g. after runtimed verified it.
 */
export const SIGNED_UPLOAD_HEADERS = ['content-length', 'content-type', 'if-none-match', 'x-amz-checksum-sha256'] as const;
/** S3's bound on the keys of one DeleteObjects request. */
const DELETE_BATCH = 1000;
/** SigV4's bound on a presigned URL's lifetime. */
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;
const mediaTypeRegExp = new RegExp(MEDIA_TYPE_PATTERN);

interface Sdk {
  s3: typeof S3;
  getSignedUrl: typeof Presigner.getSignedUrl;
}

/** Set once the SDK is loaded: an S3 error can only exist after that. */
let loadedSdk: Sdk | undefined;
let loadingSdk: Promise<Sdk> | undefined;

/**
 * The AWS SDK's S3 client and presigner, imported on first use: runtimed starts without them
 * (about 4 MiB of its heap), and most Pods never touch an ArtifactStore.
 */
function loadSdk(): Promise<Sdk> {
  loadingSdk ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/s3-request-presigner')]).then(([s3, presigner]) => {
    loadedSdk = { s3, getSignedUrl: presigner.getSignedUrl };
    return loadedSdk;
  });
  return loadingSdk;
}

/**
 * The objects of one ArtifactStore location, through the AWS SDK's S3 client with the
 * store's own credentials. Whoever holds an instance holds those credentials: runtimed,
 * the controller-manager and `krt` (with the user's access to the Secret), never user code.
 */
export class ArtifactObjects {
  readonly location: ArtifactStoreLocation;
  readonly #credentials: ArtifactStoreCredentials;
  readonly #maxAttempts: number;
  readonly #timeoutMs: number;
  readonly #maxListedKeys: number;
  /** Made on the first request (with the SDK, loaded then). */
  #client: S3.S3Client | undefined;

  constructor(location: ArtifactStoreLocation, credentials: ArtifactStoreCredentials, options: ArtifactObjectsOptions = {}) {
    this.location = location;
    this.#credentials = { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey };
    this.#maxAttempts = options.maxAttempts ?? 3;
    this.#timeoutMs = options.requestTimeoutMs ?? 30_000;
    this.#maxListedKeys = options.maxListedKeys ?? 100_000;
  }

  /** The S3 client and the SDK (loaded on the first call). */
  async #sdk(): Promise<Sdk & { client: S3.S3Client }> {
    const sdk = await loadSdk();
    this.#client ??= new sdk.s3.S3Client({
      endpoint: this.location.endpoint,
      region: this.location.region,
      forcePathStyle: this.location.forcePathStyle,
      credentials: this.#credentials,
      maxAttempts: this.#maxAttempts,
      // Checksums are what kruntimes signs and verifies itself; the SDK's defaults would add
      // CRC32 trailers that not every S3-compatible server accepts.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    return { ...sdk, client: this.#client };
  }

  /**
   * A presigned PUT for `key` whose signature covers Content-Length (so the store refuses
   * any other body size), Content-Type, x-amz-checksum-sha256 (so it can refuse another
   * body of the same size) and If-None-Match: * (so it refuses to replace an object), and
   * expires after `expiresInSeconds`.
   */
  async presignUpload(key: string, request: UploadGrantRequest): Promise<UploadGrant> {
    const { size, sha256Hex, mediaType, expiresInSeconds } = request;
    if (!Number.isSafeInteger(size) || size < 0 || size > BOUNDS.artifactMaxBytes) {
      throw new KruntimesError(
        'InvalidRequest',
        `size must be an integer from 0 to ${String(BOUNDS.artifactMaxBytes)}, not ${String(size)}`,
      );
    }
    if (!isSha256Hex(sha256Hex)) throw new KruntimesError('InvalidRequest', 'sha256 must be 64 lowercase hex digits');
    if (!mediaTypeRegExp.test(mediaType)) throw new KruntimesError('InvalidRequest', `invalid media type ${JSON.stringify(mediaType)}`);
    if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 || expiresInSeconds > MAX_PRESIGN_SECONDS) {
      throw new KruntimesError('InvalidRequest', `expiresInSeconds must be an integer from 1 to ${String(MAX_PRESIGN_SECONDS)}`);
    }
    assertKey(key);
    const checksum = Buffer.from(sha256Hex, 'hex').toString('base64');
    const { s3, client, getSignedUrl } = await this.#sdk();
    const signingDate = new Date();
    const url = await getSignedUrl(
      client,
      new s3.PutObjectCommand({
        Bucket: this.location.bucket,
        Key: key,
        ContentLength: size,
        ContentType: mediaType,
        ChecksumSHA256: checksum,
        IfNoneMatch: '*',
      }),
      {
        expiresIn: expiresInSeconds,
        signingDate,
        // The presigner leaves Content-Type unsigned and hoists x-amz-* headers into the
        // query by default; both must be signed headers so that the store checks them.
        signableHeaders: new Set(SIGNED_UPLOAD_HEADERS),
        unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
      },
    );
    // A changed SDK default must not silently turn a bounded grant into an unbounded one.
    const signed = new URL(url).searchParams.get('X-Amz-SignedHeaders')?.split(';') ?? [];
    const missing = SIGNED_UPLOAD_HEADERS.filter((header) => !signed.includes(header));
    if (missing.length > 0) throw new KruntimesError('Internal', `the presigned upload does not sign ${missing.join(', ')}`);
    return {
      url,
      method: 'PUT',
      headers: { 'content-length': String(size), 'content-type': mediaType, 'if-none-match': '*', 'x-amz-checksum-sha256': checksum },
      expiresAt: new Date(signingDate.getTime() + expiresInSeconds * 1000),
    };
  }

  /** Size, upload time and media type of `key`, or undefined when there is no such object. */
  async stat(key: string): Promise<ObjectStat | undefined> {
    assertKey(key);
    const { s3, client } = await this.#sdk();
    try {
      const head = await client.send(new s3.HeadObjectCommand({ Bucket: this.location.bucket, Key: key }), this.#abort());
      return {
        size: head.ContentLength ?? 0,
        lastModified: head.LastModified ?? new Date(0),
        contentType: head.ContentType,
      };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw storeError(`HEAD ${key}`, error);
    }
  }

  /**
   * The SHA-256 and size of `key`'s body, computed by streaming it; a body over `maxBytes`
   * is refused (ArtifactTooLarge) as soon as the stream passes the bound. Undefined when
   * there is no such object.
   */
  async sha256(key: string, maxBytes: number): Promise<{ sha256Hex: string; size: number } | undefined> {
    const body = await this.download(key);
    if (body === undefined) return undefined;
    const hash = createHash('sha256');
    let size = 0;
    try {
      for await (const chunk of body) {
        const bytes = chunk as Buffer;
        size += bytes.length;
        if (size > maxBytes) {
          throw new KruntimesError('ArtifactTooLarge', `${key} is larger than ${String(maxBytes)} bytes`);
        }
        hash.update(bytes);
      }
    } catch (error) {
      if (error instanceof KruntimesError) throw error;
      throw storeError(`GET ${key}`, error);
    } finally {
      body.destroy();
    }
    return { sha256Hex: hash.digest('hex'), size };
  }

  /** The body of `key` as a stream, or undefined when there is no such object. The caller consumes or destroys it. */
  async download(key: string): Promise<Readable | undefined> {
    assertKey(key);
    const { s3, client } = await this.#sdk();
    try {
      const object = await client.send(new s3.GetObjectCommand({ Bucket: this.location.bucket, Key: key }), this.#abort());
      const body = object.Body;
      if (!(body instanceof Readable)) throw new KruntimesError('Internal', `GET ${key}: the S3 client returned no Node.js stream`);
      return body;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      if (error instanceof KruntimesError) throw error;
      throw storeError(`GET ${key}`, error);
    }
  }

  /** Every object under `prefix`, page by page, bounded by maxListedKeys. */
  async *list(prefix: string): AsyncGenerator<ListedObject> {
    const { s3, client } = await this.#sdk();
    let token: string | undefined;
    let listed = 0;
    do {
      let page;
      try {
        page = await client.send(
          new s3.ListObjectsV2Command({
            Bucket: this.location.bucket,
            Prefix: prefix,
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
          this.#abort(),
        );
      } catch (error) {
        throw storeError(`LIST ${prefix}`, error);
      }
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue;
        if (listed >= this.#maxListedKeys) {
          throw new KruntimesError('ArtifactStoreUnavailable', `more than ${String(this.#maxListedKeys)} objects under ${prefix}`);
        }
        listed += 1;
        yield { key: object.Key, size: object.Size ?? 0, lastModified: object.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /** Removes `keys` (absent ones count as removed), in batches of at most 1000. */
  async remove(keys: readonly string[]): Promise<void> {
    for (const key of keys) assertKey(key);
    if (keys.length === 0) return;
    const { s3, client } = await this.#sdk();
    for (let start = 0; start < keys.length; start += DELETE_BATCH) {
      const batch = keys.slice(start, start + DELETE_BATCH);
      let result;
      try {
        result = await client.send(
          new s3.DeleteObjectsCommand({
            Bucket: this.location.bucket,
            Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
          }),
          this.#abort(),
        );
      } catch (error) {
        throw storeError(`DELETE ${String(batch.length)} objects`, error);
      }
      const failed = (result.Errors ?? []).filter((entry) => entry.Code !== 'NoSuchKey');
      if (failed.length > 0) {
        const first = failed[0];
        throw new KruntimesError(
          'ArtifactStoreUnavailable',
          `the store did not delete ${String(failed.length)} of ${String(batch.length)} objects (first: ${first?.Key ?? '?'}: ${first?.Code ?? '?'} ${first?.Message ?? ''})`,
        );
      }
    }
  }

  /** Closes the client's connections (if it made any). */
  destroy(): void {
    this.#client?.destroy();
  }

  #abort(): { abortSignal: AbortSignal } {
    return { abortSignal: AbortSignal.timeout(this.#timeoutMs) };
  }
}

function assertKey(key: string): void {
  if (key === '' || key.startsWith('/') || key.length > 1024)
    throw new KruntimesError('InvalidRequest', `invalid object key ${JSON.stringify(key)}`);
}

function isS3Error(error: unknown): error is S3.S3ServiceException {
  return loadedSdk !== undefined && error instanceof loadedSdk.s3.S3ServiceException;
}

function isNotFound(error: unknown): boolean {
  if (!isS3Error(error)) return false;
  return error.name === 'NoSuchKey' || error.name === 'NotFound' || error.$metadata.httpStatusCode === 404;
}

/** Anything the store answers that is not "no such object", or no answer at all. */
function storeError(operation: string, error: unknown): KruntimesError {
  const detail = isS3Error(error)
    ? `${error.name} (HTTP ${String(error.$metadata.httpStatusCode ?? '?')})${error.message === '' || error.message === error.name ? '' : `: ${error.message}`}`
    : error instanceof Error
      ? error.message
      : String(error);
  return new KruntimesError('ArtifactStoreUnavailable', `object store: ${operation}: ${detail}`, { cause: error });
}

import { KruntimesError, errorCodeForGrpcStatus, isErrorCode } from '@kruntimes/errors';
import { METADATA_KEYS, artifactGrantsV1 } from '@kruntimes/proto';
import { ClientError, Metadata, createChannel, createClient } from 'nice-grpc';
import type { CallOptions, Channel, Client } from 'nice-grpc';
import type { ArtifactClaim } from './artifact-claims.ts';
import { checkListenAddress } from './listen-address.ts';

/** A grant runtimed did not answer within this long is abandoned. */
const GRANT_TIMEOUT_MS = 10_000;
/**
 * AwaitInput reads the checkpoint back from the store and writes the Run's status
 * (retrying on conflicts), so it gets longer than a grant.
 */
export const AWAIT_INPUT_TIMEOUT_MS = 30_000;

/** What user code gets back from POST /v1/grants; what the Runtime Server uses to store a checkpoint. */
export interface UploadGrant {
  readonly url: string;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  /** RFC 3339. */
  readonly expiresAt: string;
}

/** The checkpoint as the Runtime Server stored it, and the schema the response must satisfy. */
export interface AwaitInputClaim {
  readonly size: number;
  /** Lowercase hex. */
  readonly sha256: string;
  readonly schemaJson: string;
}

/**
 * runtimed's ArtifactGrants service for one execution: plaintext gRPC to a loopback
 * `host:port` or `unix:/path` (refused otherwise, as the grant token must not leave the Pod).
 * runtimed's typed refusals (StaleAttempt, ArtifactTooLarge, CheckpointUnsupported, ...)
 * come back as KruntimesErrors with their code unchanged.
 */
export class ArtifactGrantsClient {
  readonly #channel: Channel;
  readonly #client: Client<artifactGrantsV1.ArtifactGrantsDefinition>;

  constructor(address: string) {
    checkListenAddress(address);
    // nice-grpc passes only `scheme://` targets through untouched.
    this.#channel = createChannel(address.startsWith('unix:') ? `unix://${address.slice('unix:'.length)}` : address);
    this.#client = createClient(artifactGrantsV1.ArtifactGrantsDefinition, this.#channel);
  }

  /** An upload grant for one declared artifact. */
  async grant(grantToken: string, claim: ArtifactClaim, signal: AbortSignal): Promise<UploadGrant> {
    const response = await call('upload grants', GRANT_TIMEOUT_MS, signal, (options) =>
      this.#client.grantUpload(
        { grantToken, artifactId: claim.artifactId, size: claim.size, sha256: claim.sha256, mediaType: claim.mediaType },
        options,
      ),
    );
    return toGrant(response);
  }

  /** A grant to PUT the attempt's checkpoint object (exactly `size` bytes with this SHA-256). */
  async grantCheckpoint(grantToken: string, size: number, sha256: string, signal: AbortSignal): Promise<UploadGrant> {
    const response = await call('checkpoint grants', GRANT_TIMEOUT_MS, signal, (options) =>
      this.#client.grantCheckpoint({ grantToken, size, sha256 }, options),
    );
    return toGrant(response);
  }

  /**
   * Asks runtimed to verify the stored checkpoint and record the Run WaitingInput;
   * resolves with the waiting attempt once the API server stored it.
   */
  async awaitInput(grantToken: string, claim: AwaitInputClaim, signal: AbortSignal): Promise<number> {
    const response = await call('input waits', AWAIT_INPUT_TIMEOUT_MS, signal, (options) =>
      this.#client.awaitInput(
        { grantToken, checkpointSize: claim.size, checkpointSha256: claim.sha256, schemaJson: claim.schemaJson },
        options,
      ),
    );
    return response.attempt;
  }

  close(): void {
    this.#channel.close();
  }
}

function toGrant(response: artifactGrantsV1.GrantUploadResponse | artifactGrantsV1.GrantCheckpointResponse): UploadGrant {
  return {
    url: response.url,
    method: response.method,
    headers: response.headers,
    expiresAt: (response.expiresAt ?? new Date(0)).toISOString(),
  };
}

/** One unary call, bounded by `timeoutMs` and `signal`, its refusal translated to a KruntimesError. */
async function call<T>(what: string, timeoutMs: number, signal: AbortSignal, send: (options: CallOptions) => Promise<T>): Promise<T> {
  let trailer = Metadata();
  try {
    return await send({
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      onTrailer: (t) => {
        trailer = t;
      },
    });
  } catch (error) {
    // Our own deadline passed (the caller's abort is the caller's to explain).
    if (!(error instanceof ClientError) && !signal.aborted && (error as Error).name === 'AbortError') {
      throw new KruntimesError('OwnerUnavailable', `runtimed's ${what} did not answer within ${timeoutMs / 1000} s`, { cause: error });
    }
    if (!(error instanceof ClientError)) throw error;
    const code = trailer.get(METADATA_KEYS.errorCode);
    if (isErrorCode(code)) throw new KruntimesError(code, error.details, { cause: error });
    throw new KruntimesError(errorCodeForGrpcStatus(error.code), `runtimed's ${what} unreachable or failed: ${error.details}`, {
      cause: error,
    });
  }
}

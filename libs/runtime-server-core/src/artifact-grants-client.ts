import { KruntimesError, errorCodeForGrpcStatus, isErrorCode } from '@kruntimes/errors';
import { METADATA_KEYS, artifactGrantsV1 } from '@kruntimes/proto';
import { ClientError, Metadata, createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';
import type { ArtifactClaim } from './artifact-claims.ts';
import { checkListenAddress } from './listen-address.ts';

/** A grant runtimed did not answer within this long is abandoned. */
const GRANT_TIMEOUT_MS = 10_000;

/** What user code gets back from POST /v1/grants. */
export interface UploadGrant {
  readonly url: string;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  /** RFC 3339. */
  readonly expiresAt: string;
}

/**
 * runtimed's ArtifactGrants service for one execution: plaintext gRPC to a loopback
 * `host:port` or `unix:/path` (refused otherwise, as the grant token must not leave the Pod).
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

  /**
   * Asks for the grant; runtimed's typed refusal (StaleAttempt, ArtifactTooLarge, ...)
   * comes back as a KruntimesError with its code unchanged.
   */
  async grant(grantToken: string, claim: ArtifactClaim, signal: AbortSignal): Promise<UploadGrant> {
    let trailer = Metadata();
    try {
      const response = await this.#client.grantUpload(
        { grantToken, artifactId: claim.artifactId, size: claim.size, sha256: claim.sha256, mediaType: claim.mediaType },
        {
          signal: AbortSignal.any([signal, AbortSignal.timeout(GRANT_TIMEOUT_MS)]),
          onTrailer: (t) => {
            trailer = t;
          },
        },
      );
      return {
        url: response.url,
        method: response.method,
        headers: response.headers,
        expiresAt: (response.expiresAt ?? new Date(0)).toISOString(),
      };
    } catch (error) {
      if (!(error instanceof ClientError)) throw error;
      const code = trailer.get(METADATA_KEYS.errorCode);
      if (isErrorCode(code)) throw new KruntimesError(code, error.details, { cause: error });
      throw new KruntimesError(errorCodeForGrpcStatus(error.code), `runtimed's upload grants unreachable or failed: ${error.details}`, {
        cause: error,
      });
    }
  }

  close(): void {
    this.#channel.close();
  }
}

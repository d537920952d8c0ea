import { KruntimesError, errorFromCode } from '@kruntimes/errors';
import { METADATA_KEYS, runtimedV1 } from '@kruntimes/proto';
import { ClientError, Metadata, createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';
import { TlsMaterial } from './tls-material.ts';

export interface PeerForwarderOptions {
  tls: TlsMaterial;
  /** This runtimed's identity: the owner must present exactly the same one. */
  identity: string;
  /** The DNS name in the certificate (`<runtime>.<namespace>.svc`), whatever IP is dialled. */
  targetName: string;
  /** The peer port of the Runtime's Pods. */
  port: number;
}

/** Metadata a hop carries on: the caller's credential and its trace context, nothing else. */
export interface ForwardedMetadata {
  readonly authorization: string;
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
}

/** The one hop to the owner's runtimed: the caller's request naming the epoch expected there. */
export interface ForwardedInvocation {
  readonly ownerIp: string;
  readonly request: Readonly<runtimedV1.InvokeFunctionRequest> & { readonly peerHop: Readonly<runtimedV1.PeerHop> };
  readonly metadata: ForwardedMetadata;
  /** How long the owner is given (invocationDeadlineMs('peerHop', ...): past the owner's own bound). */
  readonly deadlineMs: number;
}

interface PeerChannel {
  version: number;
  channel: Channel;
  client: Client<runtimedV1.FunctionRuntimeDefinition>;
}

/** Far more Pods than one Runtime has; beyond it the least recently added channel closes. */
const MAX_CHANNELS = 64;

/**
 * Forwards an invocation once to the owner's peer port over mTLS ("Path of a request" in docs/invoke-contract.md). One
 * channel per owner address, rebuilt when the workload certificate changes. grpc-js
 * retries are off: a hop is never repeated, whatever failed.
 */
export class PeerForwarder {
  readonly #options: PeerForwarderOptions;
  readonly #channels = new Map<string, PeerChannel>();

  constructor(options: PeerForwarderOptions) {
    this.#options = options;
  }

  /**
   * The owner's answer, or its KruntimesError (from its `krt-error-code` trailer). A
   * failure without one (unreachable, TLS refused, connection lost after the request was
   * sent) is OwnerUnavailable: the outcome may be unknown and it is never retried.
   * Aborting `signal` (the caller went away) rejects with the abort reason.
   */
  async forward(invocation: ForwardedInvocation, signal: AbortSignal): Promise<runtimedV1.InvokeFunctionResponse> {
    const { ownerIp, request, metadata, deadlineMs } = invocation;
    const client = this.#client(ownerIp);
    const outgoing = Metadata({ [METADATA_KEYS.authorization]: metadata.authorization });
    if (metadata.traceparent !== undefined) outgoing.set('traceparent', metadata.traceparent);
    if (metadata.tracestate !== undefined) outgoing.set('tracestate', metadata.tracestate);
    const deadline = AbortSignal.timeout(deadlineMs);
    let trailer = Metadata();
    try {
      return await client.invokeFunction(request, {
        metadata: outgoing,
        signal: AbortSignal.any([signal, deadline]),
        onTrailer: (t) => {
          trailer = t;
        },
      });
    } catch (error) {
      if (signal.aborted) throw error;
      if (deadline.aborted)
        throw new KruntimesError('OwnerUnavailable', `the owner at ${ownerIp} did not answer within ${deadlineMs} ms`, { cause: error });
      if (!(error instanceof ClientError)) throw error;
      const code = trailer.get(METADATA_KEYS.errorCode);
      if (code !== undefined) throw errorFromCode(code, error.details);
      throw new KruntimesError('OwnerUnavailable', `the owner at ${ownerIp} could not be reached: ${error.details}`, { cause: error });
    }
  }

  close(): void {
    for (const { channel } of this.#channels.values()) channel.close();
    this.#channels.clear();
  }

  #client(ownerIp: string): Client<runtimedV1.FunctionRuntimeDefinition> {
    const snapshot = this.#options.tls.current;
    if (snapshot === undefined) throw new KruntimesError('OwnerUnavailable', 'this runtimed has no workload certificate loaded');
    const address = `${ownerIp.includes(':') ? `[${ownerIp}]` : ownerIp}:${this.#options.port}`;
    const existing = this.#channels.get(address);
    if (existing?.version === snapshot.version) return existing.client;
    existing?.channel.close();
    this.#channels.delete(address);
    const channel = createChannel(address, TlsMaterial.channelCredentials(snapshot, this.#options.identity), {
      'grpc.ssl_target_name_override': this.#options.targetName,
      'grpc.default_authority': this.#options.targetName,
      'grpc.enable_retries': 0,
      'grpc.enable_channelz': 0,
    });
    const entry: PeerChannel = { version: snapshot.version, channel, client: createClient(runtimedV1.FunctionRuntimeDefinition, channel) };
    this.#channels.set(address, entry);
    if (this.#channels.size > MAX_CHANNELS) {
      const [oldest] = this.#channels;
      if (oldest !== undefined) {
        oldest[1].channel.close();
        this.#channels.delete(oldest[0]);
      }
    }
    return entry.client;
  }
}

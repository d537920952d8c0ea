import { BOUNDS, DEFAULTS, isUid, isValidInvocationId } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';

/** The port a FunctionRuntime call arrived on: the gateway's (TLS) or the peers' (mTLS). */
export type DataplanePort = 'grpc' | 'peer';

export interface PeerHopView {
  readonly expectedAttempt: number;
  readonly expectedPodUid: string;
  readonly fromPod: string;
}

/** An InvokeFunctionRequest as the dataplane reads it (proto-independent): the gateway's, or a peer's hop. */
export interface IncomingInvocation {
  readonly namespace: string;
  readonly runtime: string;
  readonly runUid: string;
  readonly invocationId: string;
  readonly payload: Uint8Array;
  /** The caller's bound; undefined when unset. */
  readonly timeoutMs: number | undefined;
  readonly peerHop: PeerHopView | undefined;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The first step of every call (docs/invoke-contract.md), before any credential is looked at:
 * the request must be for this runtimed's namespace and Runtime, well formed and within
 * the bounds, and a peer hop may arrive only on the peer port (and nothing else there).
 * Throws the KruntimesError to answer.
 */
export function validateInvocation(request: IncomingInvocation, self: { namespace: string; runtime: string }, port: DataplanePort): void {
  if (port === 'grpc' && request.peerHop !== undefined)
    throw new KruntimesError('InvalidRequest', 'a peer hop is accepted only on the peer port');
  if (port === 'peer' && request.peerHop === undefined) throw new KruntimesError('InvalidRequest', 'the peer port serves only peer hops');
  if (request.namespace !== self.namespace || request.runtime !== self.runtime) {
    throw new KruntimesError(
      'InvalidRequest',
      `this runtimed serves Runtime ${self.namespace}/${self.runtime}, not ${request.namespace}/${request.runtime}`,
    );
  }
  if (!isUid(request.runUid)) throw new KruntimesError('InvalidRequest', 'run_uid is not a Kubernetes UID');
  if (!isValidInvocationId(request.invocationId)) {
    throw new KruntimesError('InvalidInvocationId', `invocation_id must be 1-${BOUNDS.invocationIdBytes} bytes of visible ASCII`);
  }
  if (request.payload.byteLength > BOUNDS.requestBodyBytes) {
    throw new KruntimesError('PayloadTooLarge', `payload is ${request.payload.byteLength} bytes, at most ${BOUNDS.requestBodyBytes}`);
  }
  if (request.payload.byteLength > 0) {
    try {
      JSON.parse(decoder.decode(request.payload));
    } catch (error) {
      throw new KruntimesError('InvalidRequest', 'payload is not UTF-8 JSON', { cause: error });
    }
  }
  if (request.timeoutMs !== undefined && request.timeoutMs <= 0)
    throw new KruntimesError('InvalidRequest', 'timeout must be positive when set');
  const hop = request.peerHop;
  if (hop !== undefined && (hop.expectedAttempt < 1 || !isUid(hop.expectedPodUid))) {
    throw new KruntimesError('InvalidRequest', 'peer_hop needs expected_attempt >= 1 and expected_pod_uid');
  }
}

/** The smaller of the caller's bound and the Run's mode.function.invocationTimeoutSeconds. */
export function effectiveTimeoutMs(requestTimeoutMs: number | undefined, invocationTimeoutSeconds: number | undefined): number {
  const runMs = (invocationTimeoutSeconds ?? DEFAULTS.invocationTimeoutSeconds) * 1000;
  return requestTimeoutMs === undefined ? runMs : Math.min(requestTimeoutMs, runMs);
}

import { Agent, request as httpsRequest } from 'node:https';
import type { AgentOptions, RequestOptions } from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, RUN_PLURAL } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import type { ReviewAnswer, Reviewer } from './review-types.ts';

export type { ReviewAnswer, ReviewDecision, Reviewer } from './review-types.ts';

const SSAR_PATH = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';
/** A SelfSubjectAccessReview answer is a few hundred bytes; anything far larger is not one. */
const MAX_RESPONSE_BYTES = 1024 * 1024;
const MAX_DETAIL_CHARS = 200;

/**
 * A Reviewer that sends a SelfSubjectAccessReview with the caller's own bearer token to
 * the kubeConfig's current cluster. Only the cluster (server, CA, TLS server name, proxy)
 * is taken from the kubeConfig: its user is dropped here, so the service's own identity
 * can never answer for a caller.
 */
export function selfSubjectAccessReviewer(kubeConfig: KubeConfig, options: { timeoutMs?: number } = {}): Reviewer {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new KruntimesError('Internal', 'authz: the kubeconfig has no current cluster');
  const server = new URL(cluster.server);
  // The caller's token must never travel in the clear.
  if (server.protocol !== 'https:') throw new KruntimesError('Internal', `authz: the API server URL must be https, not ${server.protocol}`);
  const clusterOnly = new KubeConfig();
  clusterOnly.loadFromClusterAndUser(cluster, { name: 'kruntimes-authz-caller' });
  let base: Promise<RequestOptions> | undefined;
  const baseOptions = (): Promise<RequestOptions> => {
    base ??= (async () => {
      const opts: RequestOptions = {};
      // CA, servername, skip-verify, and client-node's agent (a proxy agent when the cluster has a proxy-url).
      await clusterOnly.applyToHTTPSOptions(opts);
      if (cluster.proxyUrl === undefined) {
        // Without a proxy, our own agent keeps connections alive: a miss costs one request, not a TLS handshake.
        opts.agent = new Agent({ keepAlive: true, maxSockets: 16, ...tlsOptionsOf(opts) });
      }
      return opts;
    })().catch((error: unknown) => {
      // A CA file that could not be read now may be readable at the next review.
      base = undefined;
      throw error;
    });
    return base;
  };
  const timeoutMs = options.timeoutMs ?? 10_000;
  const path = server.pathname.replace(/\/+$/, '') + SSAR_PATH;

  return async (request) => {
    const body = JSON.stringify({
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: {
        resourceAttributes: { group: API_GROUP, resource: RUN_PLURAL, verb: 'get', namespace: request.namespace, name: request.name },
      },
    });
    const opts = await baseOptions();
    const { status, text } = await post(
      {
        ...opts,
        protocol: 'https:',
        hostname: server.hostname.replace(/^\[|\]$/g, ''),
        port: server.port === '' ? 443 : Number(server.port),
        path,
        method: 'POST',
        // Only these headers: the cluster-only kubeConfig carries no credentials of its own.
        headers: {
          Authorization: `Bearer ${request.token}`,
          'Content-Type': 'application/json',
          Accept: 'application/json',
          'Content-Length': Buffer.byteLength(body),
        },
        timeout: timeoutMs,
      },
      body,
    );
    return decisionOf(status, text);
  };
}

function tlsOptionsOf(opts: RequestOptions): AgentOptions {
  const tls: AgentOptions = {};
  if (opts.ca !== undefined) tls.ca = opts.ca;
  if (opts.servername !== undefined) tls.servername = opts.servername;
  if (opts.rejectUnauthorized !== undefined) tls.rejectUnauthorized = opts.rejectUnauthorized;
  return tls;
}

/** Reads the API server's answer to one review; exported for table-driven tests. */
export function decisionOf(status: number, text: string): ReviewAnswer {
  if (status === 401) return { decision: 'unauthenticated', evaluationError: false };
  if (status === 403) {
    // Not a decision about the Run: the bootstrap policy (system:basic-user) lets every
    // authenticated user create self-reviews, and a kube-apiserver that has just started
    // answers this 403 until its RBAC informers have listed that ClusterRole.
    throw new KruntimesError(
      'AuthorizationUnavailable',
      `authz: the API server refused the SelfSubjectAccessReview itself (HTTP 403${statusMessage(text)}); its RBAC may not be loaded yet`,
    );
  }
  if (status === 429 || status >= 500) {
    throw new KruntimesError('AuthorizationUnavailable', `authz: SelfSubjectAccessReview answered HTTP ${status}${statusMessage(text)}`);
  }
  if (status !== 200 && status !== 201) {
    throw new KruntimesError('Internal', `authz: SelfSubjectAccessReview answered HTTP ${status}${statusMessage(text)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new KruntimesError('Internal', 'authz: SelfSubjectAccessReview answer is not JSON', { cause: error });
  }
  const review = (parsed as { status?: { allowed?: unknown; evaluationError?: unknown } } | null)?.status;
  const allowed = review?.allowed;
  if (typeof allowed !== 'boolean') throw new KruntimesError('Internal', 'authz: SelfSubjectAccessReview answer has no status.allowed');
  const evaluationError = typeof review?.evaluationError === 'string' && review.evaluationError !== '';
  return { decision: allowed ? 'allowed' : 'denied', evaluationError };
}

function statusMessage(text: string): string {
  try {
    const message = (JSON.parse(text) as { message?: unknown } | null)?.message;
    return typeof message === 'string' ? `: ${message.slice(0, MAX_DETAIL_CHARS)}` : '';
  } catch {
    return '';
  }
}

function post(options: RequestOptions, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const fail = (message: string, cause?: unknown, code: 'AuthorizationUnavailable' | 'Internal' = 'AuthorizationUnavailable'): void => {
      // Node's errors name the host and the syscall, never the request headers (the token).
      reject(new KruntimesError(code, `authz: SelfSubjectAccessReview failed: ${message}`, { cause }));
    };
    const req = httpsRequest(options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          req.destroy();
          // Whatever answered, it was not a review.
          fail(`answer larger than ${MAX_RESPONSE_BYTES} bytes`, undefined, 'Internal');
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (error) => {
        fail(error.message, error);
      });
    });
    req.on('timeout', () => {
      req.destroy(new Error(`no answer within ${options.timeout ?? 0} ms`));
    });
    req.on('error', (error) => {
      fail(error.message, error);
    });
    req.end(body);
  });
}

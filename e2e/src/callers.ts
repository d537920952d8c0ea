// Callers of the dataplane: the control plane's users and one HTTPS invoke through the gateway.
import { call } from '@kruntimes/testing';
import type { HttpAnswer } from '@kruntimes/testing';
import type { GatewayProcess } from './gateway-process.ts';

/** The users of the control plane: admin is system:masters; alice and bob have no rights until granted. */
export const USERS = ['admin', 'alice', 'bob'] as const;
export type UserName = (typeof USERS)[number];

export type InvokeRoute = 'functions' | 'runs';

export interface InvokeOptions {
  runtime: string;
  uid: string;
  /** Bearer token; omitted: no Authorization header at all. */
  token?: string;
  /** JSON text or raw bytes; default `{}`. */
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** `functions` (default) or the `runs` alias. */
  route?: InvokeRoute;
  chunked?: boolean;
  method?: string;
}

/** The gateway URL of a Run's invoke path. */
export function invokeUrl(
  gateway: GatewayProcess,
  namespace: string,
  runtime: string,
  uid: string,
  route: InvokeRoute = 'functions',
): string {
  return `${gateway.url}/v1/namespaces/${namespace}/runtimes/${runtime}/${route}/${uid}:invoke`;
}

/** One invoke through the gateway: status, headers, the JSON body (when it is JSON). */
export async function invoke(gateway: GatewayProcess, namespace: string, options: InvokeOptions): Promise<HttpAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  return call(invokeUrl(gateway, namespace, options.runtime, options.uid, options.route), {
    ca: gateway.caPem,
    headers,
    body: options.body ?? '{}',
    ...(options.chunked === undefined ? {} : { chunked: options.chunked }),
    ...(options.method === undefined ? {} : { method: options.method }),
  });
}

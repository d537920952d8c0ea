import type { RunEndpoint } from '@kruntimes/api';

export interface EndpointTarget {
  namespace: string;
  runtime: string;
  runUID: string;
}

/**
 * The canonical invoke URL of a function Run ("Request" in docs/invoke-contract.md): the gateway path for
 * namespace, Runtime and the immutable Run UID, so a deleted Run's name can never point
 * at a later Run. The caBundle is published when the gateway's CA is configured.
 */
export function functionEndpoint(gatewayHost: string, target: EndpointTarget, caPem: string | undefined): RunEndpoint {
  const path = ['v1', 'namespaces', target.namespace, 'runtimes', target.runtime, 'functions', `${target.runUID}:invoke`]
    .map((segment) => encodeURIComponent(segment).replaceAll('%3A', ':'))
    .join('/');
  return {
    protocol: 'HTTPS',
    url: `https://${gatewayHost}/${path}`,
    ...(caPem === undefined ? {} : { caBundle: Buffer.from(caPem, 'utf8').toString('base64') }),
  };
}

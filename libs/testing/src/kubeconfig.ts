import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';

export interface KubeconfigParams {
  /** https://127.0.0.1:PORT */
  server: string;
  /** PEM of the CA that issued the API server's serving certificate. */
  caPem: string;
  user: string;
  token: string;
  clusterName?: string;
}

/**
 * A self-contained kubeconfig (CA embedded, bearer token) in the standard file format,
 * readable by kubectl, the Go components and @kubernetes/client-node alike.
 */
export function kubeconfigYaml(params: KubeconfigParams): string {
  const cluster = params.clusterName ?? 'kruntimes-local';
  const context = `${params.user}@${cluster}`;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: cluster,
        cluster: {
          server: params.server,
          'certificate-authority-data': Buffer.from(params.caPem).toString('base64'),
        },
      },
    ],
    users: [{ name: params.user, user: { token: params.token } }],
    contexts: [{ name: context, context: { cluster, user: params.user } }],
    'current-context': context,
  });
}

export function kubeConfigFor(params: KubeconfigParams): KubeConfig {
  const config = new KubeConfig();
  config.loadFromString(kubeconfigYaml(params));
  return config;
}

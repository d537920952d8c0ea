import type { CoreV1Api, V1Container, V1Pod } from '@kubernetes/client-node';
import { configMapData, secretData } from './api-objects.ts';
import { downwardField } from './downward.ts';
import { ContainerConfigError } from './errors.ts';
import { expand } from './expand.ts';
import { CONTAINER_ROOT_ENV } from './volumes.ts';

/** The Pod's loopback address, for processes that do not read the downward API. */
export const POD_IP_ENV = 'KRUNTIMES_POD_IP';

export interface EnvContext {
  core: CoreV1Api;
  pod: V1Pod;
  container: V1Container;
  podIP: string;
  hostIP: string;
  /** ENV of the mapped image. */
  imageEnv: Readonly<Record<string, string>>;
  containerRoot: string;
  /** The loopback API server ("The control plane for tests and by hand" in README.md: never the ClusterIP). */
  apiServer: { host: string; port: number };
}

/**
 * The container's environment, in the kubelet's order: image ENV, then the `kubernetes`
 * Service variables and the local node's own variables, then `envFrom`, then `env` with
 * `$(VAR)` expansion against everything defined before it. Nothing of the agent's own
 * environment leaks in except PATH (a container image would bring its own), so tests
 * do not depend on the developer's shell.
 *
 * Service links (`<SVC>_SERVICE_HOST` for every Service of the namespace) are not set:
 * they would be ClusterIPs, which nothing serves locally and which are never dialled.
 */
export async function containerEnv(context: EnvContext): Promise<Record<string, string>> {
  const { pod, container } = context;
  const namespace = pod.metadata?.namespace ?? '';
  const { host, port } = context.apiServer;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOSTNAME: pod.spec?.hostname ?? pod.metadata?.name ?? '',
    ...context.imageEnv,
    KUBERNETES_SERVICE_HOST: host,
    KUBERNETES_SERVICE_PORT: String(port),
    KUBERNETES_SERVICE_PORT_HTTPS: String(port),
    KUBERNETES_PORT: `tcp://${host}:${port}`,
    KUBERNETES_PORT_443_TCP: `tcp://${host}:${port}`,
    KUBERNETES_PORT_443_TCP_PROTO: 'tcp',
    KUBERNETES_PORT_443_TCP_ADDR: host,
    KUBERNETES_PORT_443_TCP_PORT: String(port),
    [POD_IP_ENV]: context.podIP,
    [CONTAINER_ROOT_ENV]: context.containerRoot,
  };
  for (const source of container.envFrom ?? []) {
    const prefix = source.prefix ?? '';
    let data: Map<string, Buffer> | undefined;
    if (source.configMapRef !== undefined) {
      data = await configMapData(context.core, namespace, source.configMapRef.name ?? '', source.configMapRef.optional ?? false);
    } else if (source.secretRef !== undefined) {
      data = await secretData(context.core, namespace, source.secretRef.name ?? '', source.secretRef.optional ?? false);
    }
    for (const [key, value] of data ?? []) env[`${prefix}${key}`] = value.toString('utf8');
  }
  for (const variable of container.env ?? []) {
    const value = await envValue(variable, context, env);
    if (value !== undefined) env[variable.name] = value;
  }
  return env;
}

async function envValue(
  variable: NonNullable<V1Container['env']>[number],
  context: EnvContext,
  defined: Record<string, string>,
): Promise<string | undefined> {
  const namespace = context.pod.metadata?.namespace ?? '';
  if (variable.valueFrom === undefined) return expand(variable.value ?? '', (name) => defined[name]);
  const from = variable.valueFrom;
  if (from.fieldRef !== undefined) return downwardField(context.pod, from.fieldRef.fieldPath, context.podIP, context.hostIP);
  if (from.configMapKeyRef !== undefined) {
    const ref = from.configMapKeyRef;
    const data = await configMapData(context.core, namespace, ref.name ?? '', ref.optional ?? false);
    return keyValue(data, ref.key, ref.optional ?? false, `configmap ${ref.name ?? ''}`);
  }
  if (from.secretKeyRef !== undefined) {
    const ref = from.secretKeyRef;
    const data = await secretData(context.core, namespace, ref.name ?? '', ref.optional ?? false);
    return keyValue(data, ref.key, ref.optional ?? false, `secret ${ref.name ?? ''}`);
  }
  throw new ContainerConfigError(
    'CreateContainerConfigError',
    `env ${variable.name}: only value, fieldRef, configMapKeyRef and secretKeyRef are supported`,
  );
}

function keyValue(data: Map<string, Buffer> | undefined, key: string, optional: boolean, what: string): string | undefined {
  const value = data?.get(key);
  if (value !== undefined) return value.toString('utf8');
  if (optional) return undefined;
  throw new ContainerConfigError('CreateContainerConfigError', `couldn't find key ${key} in ${what}`);
}

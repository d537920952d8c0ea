import { ApiException } from '@kubernetes/client-node';
import type { CoreV1Api, V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { ContainerConfigError } from './errors.ts';

export function isNotFound(error: unknown): boolean {
  return error instanceof ApiException && error.code === 404;
}

export function isConflict(error: unknown): boolean {
  return error instanceof ApiException && error.code === 409;
}

/** A ConfigMap's keys (data and binaryData) as bytes; undefined if it is missing and optional. */
export async function configMapData(
  core: CoreV1Api,
  namespace: string,
  name: string,
  optional: boolean,
): Promise<Map<string, Buffer> | undefined> {
  let object: V1ConfigMap;
  try {
    object = await core.readNamespacedConfigMap({ namespace, name });
  } catch (error) {
    if (isNotFound(error)) {
      if (optional) return undefined;
      throw new ContainerConfigError('CreateContainerConfigError', `configmap "${name}" not found`, { cause: error });
    }
    throw error;
  }
  const data = new Map<string, Buffer>();
  for (const [key, value] of Object.entries(object.data ?? {})) data.set(key, Buffer.from(value, 'utf8'));
  for (const [key, value] of Object.entries(object.binaryData ?? {})) data.set(key, Buffer.from(value, 'base64'));
  return data;
}

/** A Secret's keys as bytes (the API returns them base64-encoded); undefined if missing and optional. */
export async function secretData(
  core: CoreV1Api,
  namespace: string,
  name: string,
  optional: boolean,
): Promise<Map<string, Buffer> | undefined> {
  let object: V1Secret;
  try {
    object = await core.readNamespacedSecret({ namespace, name });
  } catch (error) {
    if (isNotFound(error)) {
      if (optional) return undefined;
      throw new ContainerConfigError('CreateContainerConfigError', `secret "${name}" not found`, { cause: error });
    }
    throw error;
  }
  const data = new Map<string, Buffer>();
  for (const [key, value] of Object.entries(object.data ?? {})) data.set(key, Buffer.from(value, 'base64'));
  return data;
}

import type { V1Pod } from '@kubernetes/client-node';
import { ContainerConfigError } from './errors.ts';

/**
 * The value of a downward-API `fieldRef.fieldPath` for a Pod running on this node with
 * address `podIP` (the Pod object's status may not carry it yet when the container starts).
 */
export function downwardField(pod: V1Pod, fieldPath: string, podIP: string, hostIP: string): string {
  const meta = pod.metadata ?? {};
  const labeled = /^metadata\.(labels|annotations)\['([^']+)'\]$/.exec(fieldPath);
  if (labeled !== null) {
    const map = labeled[1] === 'labels' ? meta.labels : meta.annotations;
    return map?.[labeled[2] ?? ''] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? '';
    case 'metadata.uid':
      return meta.uid ?? '';
    case 'metadata.labels':
      return formatMap(meta.labels);
    case 'metadata.annotations':
      return formatMap(meta.annotations);
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.podIP':
    case 'status.podIPs':
      return podIP;
    case 'status.hostIP':
    case 'status.hostIPs':
      return hostIP;
    default:
      throw new ContainerConfigError('CreateContainerConfigError', `unsupported downward API field ${fieldPath}`);
  }
}

/** `key="value"` lines, sorted, as the kubelet writes labels and annotations files. */
function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((key) => `${key}=${JSON.stringify(map?.[key] ?? '')}`)
    .join('\n');
}

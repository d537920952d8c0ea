import type { V1Pod, V1Service } from '@kubernetes/client-node';
import type { ReadonlyDeep } from './object-key.ts';

export interface ServiceEndpoint {
  podName: string;
  podUID: string;
  ip: string;
  /** Service port name ('' when unnamed) -> the Pod's port number. */
  ports: Record<string, number>;
}

/**
 * The ready endpoints of a Service, computed from its selector and the Pods as the
 * EndpointSlice controller does: Pods that match, have an IP, are Ready and are not
 * terminating; named target ports are resolved per Pod.
 *
 * Why this exists: the API server refuses loopback addresses in EndpointSlices
 * ("may not be in the loopback range"), so on the local cluster, whose Pods live on
 * 127.0.0.x, kube-controller-manager can never list them. The gateway and the fence
 * read the same answer from here there; in a real cluster the slices say the same.
 */
export function serviceEndpoints(service: ReadonlyDeep<V1Service>, pods: readonly ReadonlyDeep<V1Pod>[]): ServiceEndpoint[] {
  const selector = service.spec?.selector;
  // A Service without a selector has manually managed endpoints: none derive from Pods.
  if (selector === undefined || Object.keys(selector).length === 0) return [];
  const namespace = service.metadata?.namespace;
  return pods
    .filter((pod) => pod.metadata?.namespace === namespace && matches(selector, pod.metadata?.labels))
    .filter((pod) => pod.metadata?.deletionTimestamp === undefined && isPodReady(pod))
    .flatMap((pod) => {
      const ip = pod.status?.podIP;
      if (ip === undefined || ip === '') return [];
      return [{ podName: pod.metadata?.name ?? '', podUID: pod.metadata?.uid ?? '', ip, ports: resolvePorts(service, pod) }];
    });
}

export function isPodReady(pod: ReadonlyDeep<V1Pod>): boolean {
  return pod.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') === true;
}

function matches(selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>> | undefined): boolean {
  return Object.entries(selector).every(([key, value]) => labels?.[key] === value);
}

function resolvePorts(service: ReadonlyDeep<V1Service>, pod: ReadonlyDeep<V1Pod>): Record<string, number> {
  const ports: Record<string, number> = {};
  for (const port of service.spec?.ports ?? []) {
    const target = port.targetPort ?? port.port;
    if (typeof target === 'number') {
      ports[port.name ?? ''] = target;
      continue;
    }
    const numeric = Number(target);
    if (Number.isInteger(numeric) && numeric > 0) {
      ports[port.name ?? ''] = numeric;
      continue;
    }
    const containerPort = pod.spec?.containers.flatMap((container) => container.ports ?? []).find((p) => p.name === target)?.containerPort;
    // A named port the Pod does not declare: the Pod is no endpoint for that port.
    if (containerPort !== undefined) ports[port.name ?? ''] = containerPort;
  }
  return ports;
}

import type { ObjectMeta, ResourceRequirements } from '@kruntimes/api';

/**
 * The subset of apps/v1 Deployment and core/v1 Service, Pod and Container that a Runtime
 * workload uses, as plain data. Structurally compatible with @kubernetes/client-node's
 * models (which this domain lib may not import), so the controller passes them to the
 * typed APIs as they are.
 */
export interface LabelSelector {
  matchLabels: Record<string, string>;
}

export interface EnvVarSource {
  fieldRef?: { fieldPath: string };
}

export interface ContainerEnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}

export interface ContainerPort {
  name: string;
  containerPort: number;
  protocol: 'TCP';
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
}

export interface Probe {
  grpc?: { port: number; service?: string };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
  successThreshold?: number;
}

export interface SecurityContext {
  /** Absent on a walled Runtime Server, whose entry sets no_new_privs (WALL_ENTRY_CAPABILITIES). */
  allowPrivilegeEscalation?: boolean;
  capabilities: { drop: string[]; add?: string[] };
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
}

export interface PodSecurityContext {
  runAsNonRoot: boolean;
  runAsUser: number;
  runAsGroup: number;
  seccompProfile: { type: 'RuntimeDefault' };
}

export interface Container {
  name: string;
  image: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  env: ContainerEnvVar[];
  ports?: ContainerPort[];
  volumeMounts: VolumeMount[];
  readinessProbe?: Probe;
  resources?: ResourceRequirements;
  securityContext: SecurityContext;
}

export interface Volume {
  name: string;
  emptyDir?: { medium?: 'Memory'; sizeLimit?: string };
  secret?: { secretName: string; defaultMode?: number; optional?: boolean };
  projected?: {
    defaultMode?: number;
    sources: (
      | { serviceAccountToken: { path: string; expirationSeconds: number; audience?: string } }
      | { configMap: { name: string; items: { key: string; path: string }[] } }
      | { downwardAPI: { items: { path: string; fieldRef: { fieldPath: string } }[] } }
    )[];
  };
}

export interface PodSpec {
  /** false: the Pod's own user namespace (its uid 0 is no one on the node). */
  hostUsers?: boolean;
  serviceAccountName: string;
  automountServiceAccountToken: boolean;
  enableServiceLinks: boolean;
  terminationGracePeriodSeconds: number;
  securityContext: PodSecurityContext;
  containers: Container[];
  volumes: Volume[];
}

export interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: PodSpec;
}

export interface Deployment {
  apiVersion: 'apps/v1';
  kind: 'Deployment';
  metadata: ObjectMeta & { name: string; namespace: string };
  spec: {
    replicas: number;
    selector: LabelSelector;
    strategy: { type: 'RollingUpdate'; rollingUpdate: { maxUnavailable: number; maxSurge: number } };
    revisionHistoryLimit: number;
    template: PodTemplate;
  };
}

export interface ServicePort {
  name: string;
  port: number;
  targetPort: string;
  protocol: 'TCP';
  appProtocol?: string;
}

export interface Service {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: ObjectMeta & { name: string; namespace: string };
  spec: {
    type: 'ClusterIP';
    selector: Record<string, string>;
    ports: ServicePort[];
    publishNotReadyAddresses: boolean;
  };
}

export interface PodDisruptionBudget {
  apiVersion: 'policy/v1';
  kind: 'PodDisruptionBudget';
  metadata: ObjectMeta & { name: string; namespace: string };
  spec: {
    maxUnavailable: number;
    selector: LabelSelector;
  };
}

export interface Secret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta & { name: string; namespace: string };
  type: 'kubernetes.io/tls';
  /** base64, as the API carries them. */
  data: Record<string, string>;
}

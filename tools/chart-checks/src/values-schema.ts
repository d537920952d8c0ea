/**
 * values.schema.json (JSON Schema draft-07) of the chart, written by
 * `npx nx run chart-checks:generate`: strict enough that bad values fail at install
 * (types, enums, patterns, unknown keys), loose only where Helm needs it.
 */
type Schema = Record<string, unknown>;

export const VALUES_SCHEMA_FILE = 'deploy/charts/kruntimes/values.schema.json';

const str = { type: 'string' };
const bool = { type: 'boolean' };
const dns1123Label = { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 };
const duration = { type: 'string', pattern: '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$' };
const port = { type: 'integer', minimum: 1, maximum: 65535 };
const cidrV4 = { type: 'string', pattern: '^([0-9]{1,3}\\.){3}[0-9]{1,3}/[0-9]{1,2}$' };
const cidrV6 = { type: 'string', pattern: '^[0-9a-fA-F:]+/[0-9]{1,3}$' };
const cidr = { anyOf: [cidrV4, cidrV6] };
const strictObject = (properties: Record<string, Schema>, required: string[] = Object.keys(properties)): Schema => ({
  type: 'object',
  additionalProperties: false,
  ...(required.length > 0 ? { required } : {}),
  properties,
});
// Subchart sections: their defaults live in the subchart's values.yaml, which `helm lint` does
// not merge before validating, so nothing inside them can be required.
const looseObject = (properties: Record<string, Schema>): Schema => strictObject(properties, []);
const stringMap = { type: 'object', additionalProperties: { type: 'string' } };
const quantity = {
  anyOf: [
    { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$' },
    { type: 'number', minimum: 0 },
  ],
};
const resourceList = {
  type: 'object',
  additionalProperties: false,
  properties: { cpu: quantity, memory: quantity, 'ephemeral-storage': quantity },
};
const image = (pullPolicy: boolean): Schema =>
  strictObject(
    {
      repository: { type: 'string', minLength: 1, pattern: '^[a-z0-9][a-z0-9._/:-]*$' },
      tag: { type: 'string', pattern: '^([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$' },
      digest: { type: 'string', pattern: '^(sha256:[a-f0-9]{64})?$' },
      ...(pullPolicy ? { pullPolicy: { type: 'string', enum: ['', 'Always', 'IfNotPresent', 'Never'] } } : {}),
    },
    [],
  );
const service = (extra: Record<string, Schema>): Schema =>
  strictObject(
    {
      global: { type: 'object' },
      replicas: { type: 'integer', minimum: 0, maximum: 100 },
      image: image(true),
      logLevel: { type: 'string', enum: ['', 'trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] },
      resources: strictObject({ requests: resourceList, limits: resourceList }, []),
      podDisruptionBudget: {
        type: 'object',
        additionalProperties: false,
        required: ['enabled'],
        properties: {
          enabled: bool,
          minAvailable: {
            anyOf: [
              { type: 'integer', minimum: 0 },
              { type: 'string', pattern: '^[0-9]+%$' },
            ],
          },
          maxUnavailable: {
            anyOf: [
              { type: 'integer', minimum: 1 },
              { type: 'string', pattern: '^[0-9]+%$' },
            ],
          },
        },
      },
      podAnnotations: stringMap,
      priorityClassName: str,
      nodeSelector: stringMap,
      tolerations: { type: 'array', items: { type: 'object' } },
      affinity: { type: 'object' },
      topologySpreadConstraints: { type: 'array', items: { type: 'object' } },
      ...extra,
    },
    // Nothing required: the subchart's values.yaml provides every default (lint sees the umbrella's values alone).
    [],
  );
const leaderElection: Schema = {
  ...looseObject({
    leaseDurationSeconds: { type: 'integer', minimum: 2, maximum: 3600 },
    renewDeadlineSeconds: { type: 'integer', minimum: 1, maximum: 3600 },
    retryPeriodSeconds: { type: 'integer', minimum: 1, maximum: 3600 },
  }),
};
const schema: Schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'kruntimes chart values',
  ...strictObject({
    global: strictObject({
      image: strictObject({
        registry: { type: 'string', pattern: '^([a-z0-9][a-z0-9.:-]*(/[a-z0-9._-]+)*)?$' },
        tag: { type: 'string', pattern: '^([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$' },
        pullPolicy: { type: 'string', enum: ['Always', 'IfNotPresent', 'Never'] },
      }),
      imagePullSecrets: { type: 'array', items: strictObject({ name: { type: 'string', minLength: 1 } }) },
      logLevel: { type: 'string', enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] },
      tracing: strictObject({ otlpEndpoint: { type: 'string', pattern: '^(https?://.+)?$' } }),
      metrics: strictObject({ enabled: bool, port }),
      health: strictObject({ port, probeFrom: { type: 'array', items: { type: 'object' } } }),
      serviceMonitor: strictObject({ enabled: bool, interval: duration, labels: stringMap }),
      watchNamespace: { anyOf: [{ const: '' }, dns1123Label] },
      automaticRetry: bool,
      leaderElectionFlowSchema: bool,
      networkPolicy: strictObject({ enabled: bool, metricsNamespaces: { type: 'array', uniqueItems: true, items: dns1123Label } }),
      internalCA: {
        ...strictObject({
          existingSecret: { type: 'string', pattern: '^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$', maxLength: 253 },
          certManager: strictObject({ enabled: bool, duration, renewBefore: duration }),
        }),
        // Exactly one source of the CA.
        if: { required: ['certManager'], properties: { certManager: { required: ['enabled'], properties: { enabled: { const: true } } } } },
        then: { properties: { existingSecret: { const: '' } } },
        else: { properties: { existingSecret: { minLength: 1 } } },
      },
    }),
    runtimes: strictObject({
      namespaces: { type: 'array', uniqueItems: true, items: dns1123Label },
      ports: strictObject({ grpc: port, peer: port, health: port }),
      metricsPort: port,
      healthProbeFrom: { type: 'array', items: { type: 'object' } },
      egress: strictObject({
        enabled: bool,
        dns: { type: 'array', items: { type: 'object' } },
        apiServer: strictObject({ cidrs: { type: 'array', items: cidr }, port }),
        allowTo: {
          type: 'array',
          items: strictObject({ to: { type: 'array', items: { type: 'object' } }, ports: { type: 'array' } }, ['to']),
        },
        internet: strictObject({
          enabled: bool,
          denyIPv4: { type: 'array', items: cidrV4 },
          denyIPv6: { type: 'array', items: cidrV6 },
          clusterCIDRsIPv4: { type: 'array', items: cidrV4 },
          clusterCIDRsIPv6: { type: 'array', items: cidrV6 },
        }),
      }),
    }),
    dashboards: strictObject({
      enabled: bool,
      namespace: { anyOf: [{ const: '' }, dns1123Label] },
      labels: stringMap,
      annotations: stringMap,
    }),
    admission: strictObject({
      policies: bool,
      aggregateToDefaultRoles: bool,
    }),
    scheduler: service({ workers: { type: 'integer', minimum: 1, maximum: 64 }, leaderElection }),
    staleRecovery: service({
      leaderElection,
      workers: { type: 'integer', minimum: 1, maximum: 64 },
      resyncSeconds: { type: 'integer', minimum: 0 },
    }),
    controllerManager: service({
      leaderElection,
      runtimeImages: looseObject({ runtimed: image(false), python: image(false), bash: image(false) }),
      runtimeServiceAccount: { type: 'string', minLength: 1, maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$' },
      runtimeUserNamespaces: bool,
      finishedRunsPerRuntime: { type: 'integer', minimum: 0 },
      runtimedResources: strictObject({ requests: resourceList, limits: resourceList }, []),
      // What runtimed accepts as KRT_GATEWAY_HOST (the controller-manager checks it again at start).
      gatewayEndpoint: looseObject({
        host: { type: 'string', pattern: '^([a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?)?$' },
        caBundle: bool,
      }),
    }),
    gateway: {
      // Disabled: nothing else of the gateway is read (the subchart is not loaded).
      if: { properties: { enabled: { const: false } } },
      then: { type: 'object', properties: { enabled: { const: false } } },
      else: service({
        enabled: bool,
        resolveMode: { type: 'string', enum: ['endpointslices', 'dns', 'endpoints'] },
        shutdownDelaySeconds: { type: 'integer', minimum: 0, maximum: 300 },
        drainSeconds: { type: 'integer', minimum: 0, maximum: 3600 },
        maglev: bool,
        port,
        service: looseObject({ port, annotations: stringMap }),
        tls: {
          ...looseObject({
            existingSecret: { type: 'string', pattern: '^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$', maxLength: 253 },
            certManager: looseObject({
              enabled: bool,
              issuerRef: looseObject({
                name: str,
                kind: { type: 'string', enum: ['Issuer', 'ClusterIssuer'] },
                group: { type: 'string', minLength: 1 },
              }),
              dnsNames: { type: 'array', items: { type: 'string', pattern: '^(\\*\\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$' } },
              duration,
              renewBefore: duration,
            }),
          }),
          if: {
            required: ['certManager'],
            properties: { certManager: { required: ['enabled'], properties: { enabled: { const: true } } } },
          },
          then: { properties: { existingSecret: { const: '' } } },
          else: { properties: { existingSecret: { minLength: 1 } } },
        },
        networkPolicy: looseObject({
          allowedNamespaces: { type: 'array', uniqueItems: true, items: dns1123Label },
          // NetworkPolicy peers: the API server checks their shape; an empty one would allow everyone.
          allowedFrom: { type: 'array', items: { type: 'object', minProperties: 1 } },
        }),
      }),
    },
  }),
};
/** The content of VALUES_SCHEMA_FILE. */
export function renderValuesSchema(): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}

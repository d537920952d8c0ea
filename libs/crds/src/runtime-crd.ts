import {
  BOUNDS,
  DEFAULTS,
  RUNTIME_CAPABILITIES,
  RUNTIME_KIND,
  RUNTIME_LANGUAGES,
  RUNTIME_PLURAL,
  RUNTIME_RUN_ISOLATIONS,
  RUNTIME_SHORT_NAMES,
  RUNTIME_SINGULAR,
  DNS1123_SUBDOMAIN_PATTERN,
} from '@kruntimes/api';
import { conditionsSchema } from './conditions-schema.ts';
import { namespacedCrd } from './crd.ts';
import { array, boolean, int32, integer, object, string } from './schema.ts';
import type { CustomResourceDefinition, JsonSchema } from './schema.ts';

const quantities: JsonSchema = {
  type: 'object',
  description: 'Resource name to quantity.',
  maxProperties: 16,
  additionalProperties: {
    'x-kubernetes-int-or-string': true,
    pattern: '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
  },
};

const port = (description: string, fallback: number): JsonSchema =>
  int32(description, { minimum: 1024, maximum: 65535, default: fallback });

const spec = object(
  'A pool of Runtime Pods for one language.',
  {
    language: string('Language of the Runtime Server.', { enum: RUNTIME_LANGUAGES }),
    image: string('Runtime Server image; defaults to the image installed for the language.', { maxLength: 1024 }),
    replicas: int32(
      'Number of Runtime Pods. With spec.scaling set the autoscaler owns it (a change by anyone else is put back, with a Warning Event ScaleOverridden); without it, set it by hand or hand it to HPA or KEDA through /scale.',
      { minimum: 0, maximum: BOUNDS.maxReplicas, default: DEFAULTS.replicas },
    ),
    scaling: object(
      'Size the pool from demand: Pods = ceil((held + Pending + spareRuns) / runs), clamped to [minReplicas, maxReplicas]; up at once, down after scaleDownDelaySeconds, and only Pods that hold no Run are removed.',
      {
        minReplicas: int32('Fewest Pods; 0 scales to zero when nothing is held or waiting.', {
          minimum: 0,
          maximum: BOUNDS.maxReplicas,
          default: DEFAULTS.minReplicas,
        }),
        maxReplicas: int32('Most Pods.', { minimum: 1, maximum: BOUNDS.maxReplicas }),
        spareRuns: int32('Free run slots kept ready beyond demand, so that a new Run binds at once (the warm pool).', {
          minimum: 0,
          maximum: BOUNDS.maxSpareRuns,
          default: DEFAULTS.spareRuns,
        }),
        scaleDownDelaySeconds: int32('How long demand must stay lower before Pods are removed.', {
          minimum: 0,
          maximum: BOUNDS.maxScaleDownDelaySeconds,
          default: DEFAULTS.scaleDownDelaySeconds,
        }),
      },
      {
        required: ['maxReplicas'],
        'x-kubernetes-validations': [
          {
            rule: '!has(self.minReplicas) || self.minReplicas <= self.maxReplicas',
            message: 'scaling.minReplicas must not exceed scaling.maxReplicas',
          },
        ],
      },
    ),
    drainSeconds: int32(
      "How long a Pod told to stop (rollout, scale-down, eviction, node drain) lets its running tasks finish; a task still running then ends Interrupted (DrainWindowExceeded). Sets the Pods' termination grace period.",
      { minimum: 0, maximum: BOUNDS.maxDrainSeconds, default: DEFAULTS.drainSeconds },
    ),
    runs: int32('Run capacity of one Pod: task executions plus registered functions.', {
      minimum: 1,
      maximum: 256,
      default: DEFAULTS.runsPerPod,
    }),
    ports: object('Ports of runtimed.', {
      grpc: port('Dedicated gRPC port used by the runtime gateway.', DEFAULTS.runtimedGrpcPort),
      peer: port('Port for peer hops between runtimed instances.', DEFAULTS.runtimedPeerPort),
    }),
    resources: object('Resources of the Runtime Server container.', { requests: quantities, limits: quantities }),
    serviceAccountName: string('Service account of the Runtime Pods.', { pattern: DNS1123_SUBDOMAIN_PATTERN, maxLength: 253 }),
    capabilities: array(
      'What the Runtime Server image supports beyond plain tasks and functions. checkpoint-v1: a task may wait for input (krt.wait_for_input).',
      string('A capability.', { enum: RUNTIME_CAPABILITIES }),
      { maxItems: RUNTIME_CAPABILITIES.length, 'x-kubernetes-list-type': 'set' },
    ),
    suspend: boolean(
      'Bind no new Run of this Runtime while true (they wait Pending, reason RuntimeSuspended); Runs already bound are not touched.',
      { default: false },
    ),
  },
  {
    required: ['language'],
    'x-kubernetes-validations': [
      {
        rule: '!has(self.ports) || !has(self.ports.grpc) || !has(self.ports.peer) || self.ports.grpc != self.ports.peer',
        message: 'ports.grpc and ports.peer must differ',
      },
    ],
  },
);

const status = object('Observed state, written by the controller-manager.', {
  observedGeneration: integer('metadata.generation last acted on.', { minimum: 0 }),
  replicas: int32('Runtime Pods that exist.', { minimum: 0 }),
  readyPods: int32('Runtime Pods that are ready.', { minimum: 0 }),
  totalCapacity: int32('Sum of spec.runs over ready Pods.', { minimum: 0 }),
  usedCapacity: int32('Capacity held by Runs.', { minimum: 0 }),
  desiredReplicas: int32("The autoscaler's decision (spec.scaling set).", { minimum: 0 }),
  pendingRuns: int32('Runs of this Runtime waiting Pending for a slot.', { minimum: 0 }),
  selector: string("Label selector of the Runtime's Pods, for the /scale subresource (HPA, KEDA).", { maxLength: 1024 }),
  runIsolation: string(
    'How the Runs sharing one of its Pods are kept apart: PerRunUser (each its own uid in the Pod user namespace) or SharedUser (user namespaces off: Runs on one Pod trust each other).',
    { enum: RUNTIME_RUN_ISOLATIONS },
  ),
  conditions: conditionsSchema,
});

export function runtimeCrd(): CustomResourceDefinition {
  return namespacedCrd({
    kind: RUNTIME_KIND,
    plural: RUNTIME_PLURAL,
    singular: RUNTIME_SINGULAR,
    shortNames: RUNTIME_SHORT_NAMES,
    description: 'A pool of Runtime Pods that run Runs of one language.',
    spec,
    status,
    subresources: {
      status: {},
      scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
    },
    printerColumns: [
      { name: 'Language', type: 'string', jsonPath: '.spec.language' },
      { name: 'Desired', type: 'integer', jsonPath: '.spec.replicas' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyPods' },
      { name: 'Used', type: 'integer', jsonPath: '.status.usedCapacity' },
      { name: 'Capacity', type: 'integer', jsonPath: '.status.totalCapacity' },
      { name: 'Pending', type: 'integer', jsonPath: '.status.pendingRuns', priority: 1 },
      { name: 'Isolation', type: 'string', jsonPath: '.status.runIsolation' },
      { name: 'Suspended', type: 'boolean', jsonPath: '.spec.suspend' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}

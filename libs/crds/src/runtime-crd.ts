import {
  DEFAULTS,
  RUNTIME_CAPABILITIES,
  RUNTIME_KIND,
  RUNTIME_LANGUAGES,
  RUNTIME_PLURAL,
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
    replicas: int32('Number of Runtime Pods.', { minimum: 0, maximum: 1000, default: DEFAULTS.replicas }),
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
    subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } },
    printerColumns: [
      { name: 'Language', type: 'string', jsonPath: '.spec.language' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyPods' },
      { name: 'Capacity', type: 'integer', jsonPath: '.status.totalCapacity' },
      { name: 'Used', type: 'integer', jsonPath: '.status.usedCapacity' },
      { name: 'Suspended', type: 'boolean', jsonPath: '.spec.suspend' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}

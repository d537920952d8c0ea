import {
  BOUNDS,
  DNS1123_SUBDOMAIN_PATTERN,
  RESPONSE_ID_PATTERN,
  RUN_INPUT_KIND,
  RUN_INPUT_PLURAL,
  RUN_INPUT_SHORT_NAMES,
  RUN_INPUT_SINGULAR,
} from '@kruntimes/api';
import { conditionsSchema } from './conditions-schema.ts';
import { namespacedCrd } from './crd.ts';
import { int32, integer, object, string } from './schema.ts';
import type { CustomResourceDefinition } from './schema.ts';

const spec = object(
  'A response to a Run waiting for input. Immutable. Creating one needs RBAC create on runinputs in the namespace: that is the right to respond, checked by the API server at the moment of the response.',
  {
    runName: string('The Run in this namespace that waits.', { pattern: DNS1123_SUBDOMAIN_PATTERN, maxLength: BOUNDS.dnsSubdomainBytes }),
    responseId: string('Caller-chosen ID: a response ID the Run already accepted continues nothing a second time.', {
      pattern: RESPONSE_ID_PATTERN,
      maxLength: 128,
    }),
    data: {
      description: `The response: any JSON value, validated against the Run's status.waitingInput.schema; at most ${String(BOUNDS.inputDataBytes)} bytes as JSON.`,
      'x-kubernetes-preserve-unknown-fields': true,
    },
  },
  {
    required: ['runName', 'responseId', 'data'],
    'x-kubernetes-validations': [
      { rule: 'self == oldSelf', message: 'a RunInput is immutable: create another one', reason: 'FieldValueForbidden' },
    ],
  },
);

const status = object('Observed state, written by the controller-manager.', {
  observedGeneration: integer('metadata.generation last acted on.', { minimum: 0 }),
  conditions: conditionsSchema,
  runUID: string('UID of the Run the response was decided against.', { maxLength: 36 }),
  attempt: int32('The continuation attempt this response started (Accepted, or DuplicateResponse: the one it had started).', {
    minimum: 1,
  }),
});

export function runInputCrd(): CustomResourceDefinition {
  return namespacedCrd({
    kind: RUN_INPUT_KIND,
    plural: RUN_INPUT_PLURAL,
    singular: RUN_INPUT_SINGULAR,
    shortNames: RUN_INPUT_SHORT_NAMES,
    description:
      'A response to a task Run that waits for input (capability checkpoint-v1): accepted, it continues the Run as a new attempt.',
    spec,
    status,
    printerColumns: [
      { name: 'Run', type: 'string', jsonPath: '.spec.runName' },
      { name: 'Response', type: 'string', jsonPath: '.spec.responseId' },
      { name: 'Accepted', type: 'string', jsonPath: ".status.conditions[?(@.type=='Accepted')].status" },
      { name: 'Reason', type: 'string', jsonPath: ".status.conditions[?(@.type=='Accepted')].reason" },
      { name: 'Attempt', type: 'integer', jsonPath: '.status.attempt' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}

import { BOUNDS } from '@kruntimes/api';
import { array, dateTime, integer, object, string } from './schema.ts';
import type { JsonSchema } from './schema.ts';

/** metav1.Condition, as every Kubernetes API that follows the conventions has it. */
export const conditionsSchema: JsonSchema = array(
  'Latest observations of the object, one per type.',
  object(
    'A condition with Kubernetes semantics: lastTransitionTime moves only when status flips.',
    {
      type: string('Condition type, e.g. Ready.', {
        maxLength: 316,
        pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
      }),
      status: string('True, False or Unknown.', { enum: ['True', 'False', 'Unknown'] }),
      reason: string('CamelCase reason for the last transition.', {
        minLength: 1,
        maxLength: 1024,
        pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
      }),
      message: string('Human-readable detail.', { maxLength: BOUNDS.messageBytes }),
      lastTransitionTime: dateTime('When status last changed.'),
      observedGeneration: integer('metadata.generation the condition was set for.', { minimum: 0 }),
    },
    { required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'] },
  ),
  { maxItems: BOUNDS.conditionCount, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] },
);

import { API_GROUP, API_VERSION, CRD_CATEGORIES, LABELS, PART_OF } from '@kruntimes/api';
import { object, string } from './schema.ts';
import type { CelRule, CustomResourceDefinition, JsonSchema, PrinterColumn } from './schema.ts';

type Subresources = CustomResourceDefinition['spec']['versions'][number]['subresources'];

export interface NamespacedCrdDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: readonly string[];
  /** The description of the whole object. */
  description: string;
  spec: JsonSchema;
  status: JsonSchema;
  printerColumns: readonly PrinterColumn[];
  /** Default: the status subresource only. */
  subresources?: Subresources;
  /** CEL rules on the whole object (they can see metadata). */
  validations?: readonly CelRule[];
  /** JSON paths of spec fields that a list or watch may select on (`fieldSelector`). */
  selectableFields?: readonly string[];
}

/**
 * One namespaced kind of the kruntimes.io group with one served and stored version: the
 * part every CRD of the project shares (names, categories, the part-of label, the status
 * subresource, the object envelope), so a kind states only its own schema and columns.
 */
export function namespacedCrd(definition: NamespacedCrdDefinition): CustomResourceDefinition {
  const { kind, plural, singular, shortNames, description, spec, status, printerColumns, validations } = definition;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${API_GROUP}`, labels: { [LABELS.partOf]: PART_OF } },
    spec: {
      group: API_GROUP,
      scope: 'Namespaced',
      names: { kind, plural, singular, shortNames, categories: CRD_CATEGORIES },
      versions: [
        {
          name: API_VERSION,
          served: true,
          storage: true,
          subresources: definition.subresources ?? { status: {} },
          additionalPrinterColumns: printerColumns,
          ...(definition.selectableFields === undefined
            ? {}
            : { selectableFields: definition.selectableFields.map((jsonPath) => ({ jsonPath })) }),
          schema: {
            openAPIV3Schema: object(
              description,
              { apiVersion: string('API version.'), kind: string('Kind.'), metadata: { type: 'object' }, spec, status },
              validations === undefined ? { required: ['spec'] } : { required: ['spec'], 'x-kubernetes-validations': validations },
            ),
          },
        },
      ],
    },
  };
}

/**
 * A small typed vocabulary for OpenAPI v3 structural schemas as Kubernetes accepts them
 * in CRDs. Only what the kruntimes CRDs use.
 */
export interface CelRule {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export interface JsonSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'boolean';
  description?: string;
  format?: string;
  enum?: readonly string[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  default?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: readonly string[];
  items?: JsonSchema;
  additionalProperties?: JsonSchema;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: readonly string[];
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-validations'?: readonly CelRule[];
}

type Extra = Omit<JsonSchema, 'type'>;

export const string = (description: string, extra: Extra = {}): JsonSchema => ({ type: 'string', description, ...extra });
export const integer = (description: string, extra: Extra = {}): JsonSchema => ({
  type: 'integer',
  format: 'int64',
  description,
  ...extra,
});
export const int32 = (description: string, extra: Extra = {}): JsonSchema => ({ type: 'integer', format: 'int32', description, ...extra });
export const boolean = (description: string, extra: Extra = {}): JsonSchema => ({ type: 'boolean', description, ...extra });
export const dateTime = (description: string): JsonSchema => ({ type: 'string', format: 'date-time', description });
export const object = (description: string, properties: Record<string, JsonSchema>, extra: Extra = {}): JsonSchema => ({
  type: 'object',
  description,
  properties,
  ...extra,
});
export const array = (description: string, items: JsonSchema, extra: Extra = {}): JsonSchema => ({
  type: 'array',
  description,
  items,
  ...extra,
});

/** A CEL list literal of strings, e.g. `['a', 'b']`. */
export function celStringList(values: readonly string[]): string {
  return `[${values.map((value) => `'${value}'`).join(', ')}]`;
}

/** The field may not change once set, and may not be added or removed after create. */
export function immutableOptional(field: string): CelRule {
  return {
    rule: `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`,
    message: `spec.${field} is immutable`,
    fieldPath: `.${field}`,
    reason: 'FieldValueForbidden',
  };
}

export function immutableRequired(field: string): CelRule {
  return {
    rule: `self.${field} == oldSelf.${field}`,
    message: `spec.${field} is immutable`,
    fieldPath: `.${field}`,
    reason: 'FieldValueForbidden',
  };
}

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'date' | 'boolean' | 'number';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    group: string;
    scope: 'Namespaced';
    names: { kind: string; plural: string; singular: string; shortNames: readonly string[]; categories: readonly string[] };
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      subresources: {
        status: Record<string, never>;
        scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
      };
      additionalPrinterColumns: readonly PrinterColumn[];
      /** Fields a list or watch may select on (`fieldSelector`); Kubernetes 1.31+ (beta), 1.32+ (GA). */
      selectableFields?: readonly { jsonPath: string }[];
      schema: { openAPIV3Schema: JsonSchema };
    }[];
  };
}

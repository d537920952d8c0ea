import { CHECKPOINT_ARTIFACT_ID, RESERVED_ARTIFACT_ID_PREFIX } from '@kruntimes/api';
import type { RunSpec } from '@kruntimes/api';
import { runCrd } from './run-crd.ts';
import type { JsonSchema } from './schema.ts';

/**
 * The problems the API server would find in a Run spec at create, found without one
 * (`krt run --local`): the Run CRD's own structural schema (types, required fields,
 * patterns, lengths, ranges, list sizes and map keys: every bound of libs/api BOUNDS it
 * carries) walked here, and its create-time CEL rules written out below. Unknown fields
 * are problems too (the API server would prune them silently; locally they are a typo).
 * Lengths count characters, as the API server does.
 */
export function runSpecProblems(spec: unknown): string[] {
  const schema = runCrd().spec.versions[0]?.schema.openAPIV3Schema.properties?.spec;
  if (schema === undefined) return ['the Run CRD has no spec schema'];
  const problems: string[] = [];
  walk(schema, spec, 'spec', problems);
  if (problems.length === 0) problems.push(...createRuleProblems(spec as RunSpec));
  return problems;
}

/** The Run CRD's CEL rules that can fail at create (the others compare with oldSelf), spec-level and field-level. */
function createRuleProblems(spec: RunSpec): string[] {
  const problems: string[] = [];
  const has = (value: unknown): boolean => value !== undefined;
  if (has(spec.source.inline) === has(spec.source.configMapKeyRef)) {
    problems.push('spec.source: exactly one of source.inline and source.configMapKeyRef must be set');
  }
  if (has(spec.mode.task) === has(spec.mode.function)) problems.push('spec.mode: exactly one of mode.task and mode.function must be set');
  const retry = spec.retryPolicy;
  if (has(spec.mode.task) && (retry?.maxAttempts ?? 1) > 1 && retry?.retrySafe !== true) {
    problems.push(
      'spec.retryPolicy.maxAttempts: spec.retryPolicy.maxAttempts > 1 needs retryPolicy.retrySafe: true: a task that is not retry-safe runs once',
    );
  }
  if (has(spec.artifacts) && !has(spec.mode.task)) problems.push('spec.artifacts: spec.artifacts is for task Runs only');
  if (has(spec.origin) && !has(spec.mode.task)) problems.push('spec.origin: spec.origin is for task Runs only');
  spec.artifacts?.outputs.forEach((output, index) => {
    if (output.id.startsWith(RESERVED_ARTIFACT_ID_PREFIX)) {
      problems.push(
        `spec.artifacts.outputs[${String(index)}].id: artifact IDs starting with ${RESERVED_ARTIFACT_ID_PREFIX} are reserved for the platform (${CHECKPOINT_ARTIFACT_ID})`,
      );
    }
  });
  return problems;
}

function walk(schema: JsonSchema, value: unknown, path: string, problems: string[]): void {
  const problem = (message: string): void => {
    problems.push(`${path}: ${message}`);
  };
  switch (schema.type) {
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        problem('must be an object');
        return;
      }
      const record = value as Record<string, unknown>;
      for (const key of schema.required ?? []) if (record[key] === undefined) problem(`${key} is required`);
      const keys = Object.keys(record);
      if (schema.maxProperties !== undefined && keys.length > schema.maxProperties) problem(`at most ${schema.maxProperties} entries`);
      for (const key of keys) {
        const child = schema.properties?.[key] ?? schema.additionalProperties;
        if (child === undefined) problem(`unknown field ${JSON.stringify(key)}`);
        else if (record[key] !== undefined) walk(child, record[key], `${path}.${key}`, problems);
      }
      return;
    }
    case 'array': {
      if (!Array.isArray(value)) {
        problem('must be a list');
        return;
      }
      if (schema.minItems !== undefined && value.length < schema.minItems) problem(`at least ${schema.minItems} items`);
      if (schema.maxItems !== undefined && value.length > schema.maxItems) problem(`at most ${schema.maxItems} items`);
      const mapKeys = schema['x-kubernetes-list-type'] === 'map' ? (schema['x-kubernetes-list-map-keys'] ?? []) : [];
      const seen = new Set<string>();
      value.forEach((item: unknown, index) => {
        if (schema.items !== undefined) walk(schema.items, item, `${path}[${index}]`, problems);
        if (mapKeys.length > 0 && typeof item === 'object' && item !== null) {
          const key = JSON.stringify(mapKeys.map((k) => (item as Record<string, unknown>)[k]));
          if (seen.has(key)) problem(`duplicate entry ${key}`);
          seen.add(key);
        }
      });
      return;
    }
    case 'string': {
      if (typeof value !== 'string') {
        problem('must be a string');
        return;
      }
      // Code points, as the API server counts a string's length.
      const length = Array.from(value).length;
      if (schema.minLength !== undefined && length < schema.minLength) problem(`at least ${schema.minLength} characters`);
      if (schema.maxLength !== undefined && length > schema.maxLength) problem(`at most ${schema.maxLength} characters`);
      if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) problem(`must match ${schema.pattern}`);
      if (schema.enum !== undefined && !schema.enum.includes(value)) problem(`must be one of ${schema.enum.join(', ')}`);
      if (schema.format === 'date-time' && Number.isNaN(Date.parse(value))) problem('must be an RFC 3339 time');
      return;
    }
    case 'integer': {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
        problem('must be an integer');
        return;
      }
      if (schema.format === 'int32' && (value < -(2 ** 31) || value >= 2 ** 31)) problem('must fit in 32 bits');
      if (schema.minimum !== undefined && value < schema.minimum) problem(`must be at least ${schema.minimum}`);
      if (schema.maximum !== undefined && value > schema.maximum) problem(`must be at most ${schema.maximum}`);
      return;
    }
    case 'boolean':
      if (typeof value !== 'boolean') problem('must be true or false');
      return;
    case undefined:
      return;
  }
}

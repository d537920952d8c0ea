import { BOUNDS, utf8ByteLength } from '@kruntimes/api';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';

/** At most this many compiled schemas are kept (a schema is compiled once per distinct text). */
const COMPILED_KEPT = 256;
/** At most this many violations are named in one refusal. */
const VIOLATIONS_NAMED = 5;

export type SchemaCheck = { ok: true; validate: ValidateFunction } | { ok: false; problem: string };

export type InputCheck =
  /** The data satisfies the schema; `json` is what the continuation is given. */
  { ok: true; json: string } | { ok: false; problem: 'InputTooLarge' | 'InputInvalid' | 'SchemaInvalid'; message: string };

// JSON Schema draft 2020-12. `strict: false`: a schema's unknown keywords (annotations
// written for other tools) are ignored, as the specification says they are. Made on the
// first schema: an instance costs ~3 MiB, and most processes (every Runtime Server) load
// this module but only a Run that waits for input ever compiles a schema.
let ajv: Ajv2020 | undefined;
const schemaCompiler = (): Ajv2020 => (ajv ??= new Ajv2020({ allErrors: true, strict: false, validateFormats: false }));
const compiled = new Map<string, ValidateFunction>();

/**
 * Compiles the JSON Schema (JSON text) a waiting Run asks its response to satisfy:
 * within BOUNDS.inputSchemaBytes, JSON, an object or a boolean, and a schema Ajv
 * accepts. Compiled schemas are cached by text (bounded, oldest dropped).
 */
export function compileInputSchema(schemaText: string): SchemaCheck {
  const cached = compiled.get(schemaText);
  if (cached !== undefined) return { ok: true, validate: cached };
  if (utf8ByteLength(schemaText) > BOUNDS.inputSchemaBytes) {
    return { ok: false, problem: `the input schema is over ${String(BOUNDS.inputSchemaBytes)} bytes` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(schemaText);
  } catch (error) {
    return { ok: false, problem: `the input schema is not JSON: ${(error as Error).message}` };
  }
  if (typeof parsed !== 'boolean' && (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))) {
    return { ok: false, problem: 'the input schema must be a JSON Schema: an object or a boolean' };
  }
  let validate: ValidateFunction;
  try {
    // `$id`s of different schemas would collide in one Ajv instance: compile without them.
    validate = schemaCompiler().compile(withoutId(parsed));
  } catch (error) {
    return { ok: false, problem: `the input schema is not a valid JSON Schema: ${(error as Error).message}` };
  }
  if (compiled.size >= COMPILED_KEPT) {
    const oldest = compiled.keys().next();
    if (oldest.done !== true) compiled.delete(oldest.value);
  }
  compiled.set(schemaText, validate);
  return { ok: true, validate };
}

/** A response's data against the waiting Run's schema, and its size as JSON. */
export function checkInput(schemaText: string, data: unknown): InputCheck {
  const json = JSON.stringify(data ?? null);
  if (utf8ByteLength(json) > BOUNDS.inputDataBytes) {
    return {
      ok: false,
      problem: 'InputTooLarge',
      message: `the response is ${String(utf8ByteLength(json))} bytes as JSON, over ${String(BOUNDS.inputDataBytes)}`,
    };
  }
  const schema = compileInputSchema(schemaText);
  if (!schema.ok) return { ok: false, problem: 'SchemaInvalid', message: schema.problem };
  // The data as the continuation will see it: what JSON keeps of it.
  if (schema.validate(JSON.parse(json))) return { ok: true, json };
  return {
    ok: false,
    problem: 'InputInvalid',
    message: `the response does not match the input schema: ${describeViolations(schema.validate.errors ?? [])}`,
  };
}

/** `/path: message` for the first few violations, e.g. `/approved: must be boolean`. */
export function describeViolations(errors: readonly ErrorObject[]): string {
  const named = errors.slice(0, VIOLATIONS_NAMED).map((error) => {
    const where = error.instancePath === '' ? '(the response)' : error.instancePath;
    const extra =
      error.keyword === 'additionalProperties' ? ` (${String((error.params as { additionalProperty?: string }).additionalProperty)})` : '';
    return `${where}: ${error.message ?? error.keyword}${extra}`;
  });
  const more = errors.length > VIOLATIONS_NAMED ? `; and ${String(errors.length - VIOLATIONS_NAMED)} more` : '';
  return named.join('; ') + more;
}

function withoutId(schema: object | boolean): object | boolean {
  if (typeof schema === 'boolean' || !('$id' in schema)) return schema;
  const { $id: _id, ...rest } = schema as Record<string, unknown>;
  return rest;
}

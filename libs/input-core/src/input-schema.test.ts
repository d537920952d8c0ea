import { BOUNDS } from '@kruntimes/api';
import { checkInput, compileInputSchema } from './input-schema.ts';

const approval = JSON.stringify({
  type: 'object',
  properties: { approved: { type: 'boolean' }, note: { type: 'string', maxLength: 20 } },
  required: ['approved'],
  additionalProperties: false,
});

describe('compileInputSchema', () => {
  it.each<[string, string, string | undefined]>([
    ['an object schema', approval, undefined],
    ['true (anything goes)', 'true', undefined],
    ['false (nothing goes)', 'false', undefined],
    ['a schema with its own $id', JSON.stringify({ $id: 'https://example.com/s', type: 'string' }), undefined],
    ['unknown keywords (annotations)', JSON.stringify({ type: 'string', 'x-ui': 'textarea' }), undefined],
    ['not JSON', '{type: object}', 'not JSON'],
    ['a string', '"object"', 'an object or a boolean'],
    ['an array', '[]', 'an object or a boolean'],
    ['null', 'null', 'an object or a boolean'],
    ['an invalid keyword value', JSON.stringify({ type: 'no-such-type' }), 'not a valid JSON Schema'],
    ['over the bound', JSON.stringify({ description: 'x'.repeat(BOUNDS.inputSchemaBytes) }), 'over'],
  ])('%s', (_name, schema, problem) => {
    const result = compileInputSchema(schema);
    if (problem === undefined) expect(result.ok).toBe(true);
    else expect(result).toEqual({ ok: false, problem: expect.stringContaining(problem) as unknown });
  });

  it('compiles one text once', () => {
    const first = compileInputSchema(approval);
    const second = compileInputSchema(approval);
    expect(first.ok && second.ok && first.validate === second.validate).toBe(true);
  });
});

describe('checkInput', () => {
  it.each<[string, string, unknown, { ok: true; json: string } | { ok: false; problem: string; contains: string }]>([
    ['a matching response', approval, { approved: true, note: 'ok' }, { ok: true, json: '{"approved":true,"note":"ok"}' }],
    [
      'a missing required property',
      approval,
      { note: 'x' },
      { ok: false, problem: 'InputInvalid', contains: "must have required property 'approved'" },
    ],
    [
      'a wrong type, named by path',
      approval,
      { approved: 'yes' },
      { ok: false, problem: 'InputInvalid', contains: '/approved: must be boolean' },
    ],
    ['an extra property, named', approval, { approved: true, extra: 1 }, { ok: false, problem: 'InputInvalid', contains: '(extra)' }],
    ['a scalar against an object schema', approval, 3, { ok: false, problem: 'InputInvalid', contains: '(the response): must be object' }],
    ['anything against true', 'true', [1, 'a'], { ok: true, json: '[1,"a"]' }],
    ['null data against true', 'true', undefined, { ok: true, json: 'null' }],
    ['anything against false', 'false', {}, { ok: false, problem: 'InputInvalid', contains: 'boolean schema is false' }],
    [
      'data over the bound',
      'true',
      { blob: 'x'.repeat(BOUNDS.inputDataBytes) },
      { ok: false, problem: 'InputTooLarge', contains: `over ${String(BOUNDS.inputDataBytes)}` },
    ],
    ['a broken schema', '{', {}, { ok: false, problem: 'SchemaInvalid', contains: 'not JSON' }],
  ])('%s', (_name, schema, data, expected) => {
    const result = checkInput(schema, data);
    if (expected.ok) {
      expect(result).toEqual(expected);
    } else {
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.problem).toBe(expected.problem);
        expect(result.message).toContain(expected.contains);
      }
    }
  });

  it('names at most five violations and counts the rest', () => {
    const schema = JSON.stringify({
      type: 'object',
      properties: Object.fromEntries('abcdefg'.split('').map((k) => [k, { type: 'string' }])),
    });
    const data = Object.fromEntries('abcdefg'.split('').map((k) => [k, 1]));
    const result = checkInput(schema, data);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toContain('and 2 more');
  });
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { parse } from 'yaml';
import { BOUNDS, INVOCATION_ID_HEADER, isValidInvocationId } from '@kruntimes/api';
import { ERROR_CODES } from '@kruntimes/errors';
import { INVOKE_ERROR_CODES, INVOKE_OPENAPI_FILE, INVOKE_PATHS, invokeOpenApiDocument, renderInvokeOpenApi } from './openapi.ts';
import { TIMEOUT_HEADER, invocationTimeoutMs, parseInvokePath } from './invoke-request.ts';

const workspaceRoot = join(import.meta.dirname, '..', '..', '..');
const committed = (): string => readFileSync(join(workspaceRoot, INVOKE_OPENAPI_FILE), 'utf8');

test(`${INVOKE_OPENAPI_FILE} is fresh (run \`npx nx run gateway-core:generate\`)`, () => {
  expect(committed()).toBe(renderInvokeOpenApi());
});

test('the committed document is valid OpenAPI 3.1', async () => {
  const validator = new Validator();
  const result = await validator.validate(parse(committed()) as Parameters<Validator['validate']>[0]);
  expect(result.errors).toBeUndefined();
  expect(result.valid).toBe(true);
  expect(validator.version).toBe('3.1');
});

/** The rows of the table under "Response" in docs/invoke-contract.md: HTTP status and codes. */
function contractTable(): { status: number; codes: string[] }[] {
  const markdown = readFileSync(join(workspaceRoot, 'docs/invoke-contract.md'), 'utf8');
  return [...markdown.matchAll(/^\|[^|\n]+\| (\d{3}) \| ([^|\n]+) \|$/gm)].map(([, status = '', codes = '']) => ({
    status: Number(status),
    codes: [...codes.matchAll(/`([A-Za-z]+)`/g)].map(([, code = '']) => code),
  }));
}

test("every code of docs/invoke-contract.md's table is an answer of the document, with the error table's status", () => {
  const rows = contractTable();
  expect(rows.length).toBeGreaterThan(10);
  for (const { status, codes } of rows) {
    for (const code of codes) {
      expect({ code, documented: (INVOKE_ERROR_CODES as readonly string[]).includes(code) }).toEqual({ code, documented: true });
      expect({ code, status: ERROR_CODES[code as keyof typeof ERROR_CODES].http }).toEqual({ code, status });
    }
  }
});

test('each HTTP status of an invoke code is a response of both routes, its codes the enum of error.code; every code of the table is in ErrorCode', () => {
  const document = invokeOpenApiDocument();
  expect(document.components?.schemas?.ErrorCode?.enum).toEqual(Object.keys(ERROR_CODES));
  for (const path of Object.values(INVOKE_PATHS)) {
    const responses = document.paths?.[path]?.post?.responses ?? {};
    for (const code of INVOKE_ERROR_CODES) {
      const status = String(ERROR_CODES[code].http);
      expect(responses[status]).toEqual({ $ref: `#/components/responses/Status${status}` });
      expect(JSON.stringify(document.components?.responses?.[`Status${status}`])).toContain(`"${code}"`);
    }
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(['200', 'default']));
  }
});

test("the path templates are the gateway's two routes, with the parameters' patterns as strict as its checks", () => {
  const document = invokeOpenApiDocument();
  const parameter = (name: string): { pattern: string; maxLength?: number } =>
    (document.components?.parameters?.[name] as { schema: { pattern: string; maxLength?: number } }).schema;
  const accepts = (name: string, value: string): boolean => {
    const { pattern, maxLength } = parameter(name);
    return new RegExp(pattern).test(value) && value.length <= (maxLength ?? Infinity);
  };
  const uid = '6f0c2d3e-1a2b-4c5d-8e9f-0a1b2c3d4e5f';
  for (const [route, template] of Object.entries(INVOKE_PATHS)) {
    const path = template.replace('{namespace}', 'demo').replace('{runtime}', 'py').replace('{runUID}', uid);
    expect(parseInvokePath(path)).toEqual({ kind: 'invoke', target: { namespace: 'demo', runtime: 'py', uid, route } });
  }
  const labels = ['demo', 'a', '0ab', 'py-3', 'Py', 'a-', '-a', 'a.b', 'x'.repeat(63), 'x'.repeat(64), ''];
  for (const value of labels) {
    const ofNamespace = parseInvokePath(
      INVOKE_PATHS.functions.replace('{namespace}', value).replace('{runtime}', 'py').replace('{runUID}', uid),
    );
    expect({ value, namespace: accepts('namespace', value) }).toEqual({ value, namespace: ofNamespace.kind === 'invoke' });
    const ofRuntime = parseInvokePath(
      INVOKE_PATHS.functions.replace('{namespace}', 'demo').replace('{runtime}', value).replace('{runUID}', uid),
    );
    expect({ value, runtime: accepts('runtime', value) }).toEqual({ value, runtime: ofRuntime.kind === 'invoke' });
  }
  for (const value of [uid, uid.toUpperCase(), 'not-a-uid', `${uid}0`]) {
    const parsed = parseInvokePath(INVOKE_PATHS.runs.replace('{namespace}', 'demo').replace('{runtime}', 'py').replace('{runUID}', value));
    expect({ value, uid: accepts('runUID', value) }).toEqual({ value, uid: parsed.kind === 'invoke' });
  }
  expect(parameter('invocationId')).toMatchObject({ maxLength: BOUNDS.invocationIdBytes });
  for (const value of ['a', 'inv-42', 'x'.repeat(128), 'x'.repeat(129), 'with space', 'tab\t', 'é', '']) {
    expect({ value, id: accepts('invocationId', value) && value.length >= 1 }).toEqual({ value, id: isValidInvocationId(value) });
  }
  expect(document.components?.parameters?.invocationId).toMatchObject({ name: INVOCATION_ID_HEADER, in: 'header' });
  expect(document.components?.parameters?.timeoutSeconds).toMatchObject({ name: TIMEOUT_HEADER, in: 'header' });
  // The pattern and the range its description states are what the gateway accepts.
  for (const value of ['1', '0.5', '2.125', '3600', '3600.001', '0', '1e3', '-1', '1.2345', ' 1']) {
    let accepted = true;
    try {
      invocationTimeoutMs(value);
    } catch {
      accepted = false;
    }
    const documented = accepts('timeoutSeconds', value) && Number(value) > 0 && Number(value) <= BOUNDS.maxInvocationTimeoutSeconds;
    expect({ value, accepted }).toEqual({ value, accepted: documented });
  }
});

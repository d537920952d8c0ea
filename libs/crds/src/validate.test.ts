import { BOUNDS } from '@kruntimes/api';
import type { RunSpec } from '@kruntimes/api';
import { runCrd } from './run-crd.ts';
import type { JsonSchema } from './schema.ts';
import { runSpecProblems } from './validate.ts';

const task: RunSpec = { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: { args: ['a'] } } };

describe('runSpecProblems (the Run CRD at create, without an API server)', () => {
  it('accepts a valid task and a valid function', () => {
    expect(runSpecProblems(task)).toEqual([]);
    expect(runSpecProblems({ ...task, mode: { function: { handler: 'main:handle' } } })).toEqual([]);
    expect(
      runSpecProblems({
        ...task,
        env: [{ name: 'A', value: 'x' }],
        timeout: '1m30s',
        artifacts: { store: 's', outputs: [{ id: 'report.csv', maxBytes: 10, mediaType: 'text/csv' }] },
      }),
    ).toEqual([]);
  });

  it.each<[string, unknown, RegExp]>([
    ['not an object', 'x', /^spec: must be an object$/],
    ['no runtime', { source: task.source, mode: task.mode }, /^spec: runtime is required$/],
    ['an unknown field', { ...task, sorce: {} }, /unknown field "sorce"/],
    [
      'inline source over its bound',
      { ...task, source: { inline: 'x'.repeat(BOUNDS.inlineSourceBytes + 1) } },
      /spec\.source\.inline: at most/,
    ],
    [
      'too many env entries',
      { ...task, env: Array.from({ length: BOUNDS.envCount + 1 }, (_, i) => ({ name: `V${i}`, value: '' })) },
      /spec\.env: at most 64 items/,
    ],
    [
      'an env value over its bound',
      { ...task, env: [{ name: 'A', value: 'x'.repeat(BOUNDS.envValueBytes + 1) }] },
      /spec\.env\[0\]\.value: at most/,
    ],
    [
      'a repeated env name',
      {
        ...task,
        env: [
          { name: 'A', value: '1' },
          { name: 'A', value: '2' },
        ],
      },
      /spec\.env: duplicate entry/,
    ],
    ['a bad env name', { ...task, env: [{ name: '1A', value: '' }] }, /spec\.env\[0\]\.name: must match/],
    ['a bad timeout', { ...task, timeout: 'soon' }, /spec\.timeout: must match/],
    ['an arg that is not a string', { ...task, mode: { task: { args: [1] } } }, /spec\.mode\.task\.args\[0\]: must be a string/],
    ['both sources', { ...task, source: { inline: 'x', configMapKeyRef: { name: 'c', key: 'k' } } }, /exactly one of source\.inline/],
    ['neither mode', { ...task, mode: {} }, /exactly one of mode\.task and mode\.function/],
    ['retries of a task that is not retrySafe', { ...task, retryPolicy: { maxAttempts: 2 } }, /needs retryPolicy\.retrySafe/],
    [
      'artifacts of a function',
      {
        ...task,
        mode: { function: { handler: 'h' } },
        artifacts: { store: 's', outputs: [{ id: 'a', maxBytes: 1, mediaType: 'text/plain' }] },
      },
      /spec\.artifacts is for task Runs only/,
    ],
    [
      'maxAttempts over its bound',
      { ...task, retryPolicy: { maxAttempts: BOUNDS.maxAttempts + 1, retrySafe: true } },
      /maxAttempts: must be at most 10/,
    ],
  ])('refuses %s', (_what, spec, message) => {
    const problems = runSpecProblems(spec);
    expect(problems.some((problem) => message.test(problem))).toBe(true);
  });
});

describe('the CEL rules of the Run spec that can fail at create', () => {
  /** Every rule under spec that does not compare with oldSelf, by its message. */
  function createRules(schema: JsonSchema | undefined): string[] {
    if (schema === undefined) return [];
    const own = (schema['x-kubernetes-validations'] ?? []).filter((rule) => !rule.rule.includes('oldSelf')).map((rule) => rule.message);
    const children = [...Object.values(schema.properties ?? {}), ...(schema.items === undefined ? [] : [schema.items])];
    return [...own, ...children.flatMap(createRules)];
  }

  it('are each written out in runSpecProblems (a new rule fails here until it is)', () => {
    const spec = runCrd().spec.versions[0]?.schema.openAPIV3Schema.properties?.spec;
    expect(createRules(spec).sort()).toEqual(
      [
        'exactly one of source.inline and source.configMapKeyRef must be set',
        'exactly one of mode.task and mode.function must be set',
        'artifact IDs starting with krt. are reserved for the platform (krt.checkpoint)',
        'spec.retryPolicy.maxAttempts > 1 needs retryPolicy.retrySafe: true: a task that is not retry-safe runs once',
        'spec.artifacts is for task Runs only',
        'spec.origin is for task Runs only',
      ].sort(),
    );
  });
});

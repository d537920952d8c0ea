import type { RunSpec } from '@kruntimes/api';
import { canonicalJson, compareLock, lockDigest, lockMismatchMessage, lockOf, parseLock, resolveInputs, sha256Digest } from './lock.ts';
import type { LockChange, ResolvedInputs } from './lock.ts';

const spec: RunSpec = {
  runtime: 'python',
  source: { inline: 'print(1)' },
  mode: { task: { args: ['a', 'b'] } },
  env: [{ name: 'A', value: '1' }],
  timeout: '30s',
};
const options: { runFile: string; language: 'python' | 'bash'; namespace: string | undefined } = {
  runFile: 'run.yaml',
  language: 'python',
  namespace: undefined,
};
const locked = lockOf(resolveInputs(spec, options));
const configMapSpec: RunSpec = { ...spec, source: { configMapKeyRef: { name: 'code', key: 'main.py' } } };
const configMapLock = lockOf(resolveInputs(configMapSpec, options), { namespace: 'team-a', text: 'print(2)' });

describe('canonicalJson and the lock digest', () => {
  it('sorts keys at every level and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ y: 1, x: 2 }], c: undefined } })).toBe('{"a":{"d":[{"x":2,"y":1}]},"b":1}');
  });

  it('is the same for the same inputs, whatever the key order of the run file', () => {
    const reordered: RunSpec = {
      timeout: '30s',
      env: [{ value: '1', name: 'A' }],
      mode: { task: { args: ['a', 'b'] } },
      source: { inline: 'print(1)' },
      runtime: 'python',
    };
    expect(lockDigest(lockOf(resolveInputs(reordered, options)))).toBe(lockDigest(locked));
    expect(locked.source).toEqual({ inline: { digest: sha256Digest('print(1)') } });
  });

  it('pins a ConfigMap source by the text read at lock time', () => {
    expect(configMapLock.source).toEqual({
      configMapKeyRef: { namespace: 'team-a', name: 'code', key: 'main.py', digest: sha256Digest('print(2)'), bytes: 8 },
    });
    expect(() => lockOf(resolveInputs(configMapSpec, options))).toThrow(/read from the cluster/);
  });

  it('parses what it writes and refuses what is not a lock', () => {
    expect(parseLock(JSON.stringify(locked))).toEqual(locked);
    expect(parseLock('not json')).toBeUndefined();
    expect(parseLock('{"lockVersion":1}')).toBeUndefined();
  });
});

describe('compareLock', () => {
  const now = (changed: Partial<RunSpec>, extra: Partial<typeof options> = {}): ResolvedInputs =>
    resolveInputs({ ...spec, ...changed }, { ...options, ...extra });
  const inputs = (changes: LockChange[]): string[] => changes.map((change) => change.input);

  it.each<[string, ResolvedInputs, string[], RegExp | undefined]>([
    ['the same inputs', now({}), [], undefined],
    [
      'an edited inline source',
      now({ source: { inline: 'print(2)' } }),
      ['source'],
      /spec\.source\.inline changed \(locked sha256:[0-9a-f]{12}, now sha256:[0-9a-f]{12}\)/,
    ],
    ['another env value', now({ env: [{ name: 'A', value: '2' }] }), ['env'], /spec\.env changed/],
    ['other args', now({ mode: { task: { args: ['a'] } } }), ['args'], /spec\.mode\.task\.args changed/],
    ['another timeout', now({ timeout: '1m' }), ['spec'], /the rest of the spec/],
    ['another language', now({}, { language: 'bash' }), ['language'], /locked python, now bash/],
    ['another run file', now({}, { runFile: 'other.yaml' }), ['runFile'], /locked for run\.yaml/],
    [
      'a ConfigMap source instead of inline',
      now({ source: { configMapKeyRef: { name: 'code', key: 'main.py' } } }),
      ['source'],
      /now spec\.source\.configMapKeyRef/,
    ],
    ['several at once', now({ source: { inline: 'x' }, env: [] }), ['source', 'env'], undefined],
  ])('%s', (_what, resolved, expected, message) => {
    const changes = compareLock(locked, resolved);
    expect(inputs(changes)).toEqual(expected);
    if (message !== undefined) expect(changes.map((change) => change.detail).join('; ')).toMatch(message);
  });

  it.each<[string, ResolvedInputs, string[]]>([
    ['the same ConfigMap key, namespace from the lock', resolveInputs(configMapSpec, options), []],
    ['the same ConfigMap key in the same namespace', resolveInputs(configMapSpec, { ...options, namespace: 'team-a' }), []],
    ['the same key in another namespace', resolveInputs(configMapSpec, { ...options, namespace: 'team-b' }), ['source']],
    ['another key', resolveInputs({ ...spec, source: { configMapKeyRef: { name: 'code', key: 'other.py' } } }, options), ['source']],
    ['an inline source instead', resolveInputs(spec, options), ['source']],
  ])('a ConfigMap source: %s', (_what, resolved, expected) => {
    expect(inputs(compareLock(configMapLock, resolved))).toEqual(expected);
  });

  it('refuses a lock of another format', () => {
    expect(inputs(compareLock({ ...locked, lockVersion: 2 as never }, now({})))).toEqual(['lockVersion']);
  });

  it('says what changed and how to re-lock', () => {
    const message = lockMismatchMessage('.krt/locks/run.yaml.lock.json', compareLock(locked, now({ source: { inline: 'x' } })));
    expect(message).toMatch(
      /^the run file does not match its lock \.krt\/locks\/run\.yaml\.lock\.json: spec\.source\.inline changed .*Nothing was run\. .*--update-lock$/,
    );
  });
});

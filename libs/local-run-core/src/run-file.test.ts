import { isLocalRunId } from '@kruntimes/api';
import { newRunId, statePaths } from './run-dir.ts';
import { parseRunFile, resolveLanguage } from './run-file.ts';

const TASK = `apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata: { name: report }
spec:
  runtime: python
  source: { inline: "print(1)" }
  mode: { task: {} }
`;

describe('parseRunFile', () => {
  it('takes a valid task Run', () => {
    expect(parseRunFile(TASK, 'run.yaml')).toEqual({
      name: 'report',
      namespace: undefined,
      spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} } },
    });
  });

  it.each<[string, string, RegExp]>([
    ['not YAML', '{', /is not YAML/],
    ['another kind', TASK.replace('kind: Run', 'kind: Runtime'), /must hold one Run/],
    [
      'a function Run',
      TASK.replace('mode: { task: {} }', 'mode: { function: { handler: main } }'),
      /is a function Run: krt run --local runs task Runs only/,
    ],
    [
      'an invalid spec (over a bound)',
      TASK.replace('mode: { task: {} }', 'mode: { task: {} }\n  timeout: forever'),
      /is not a valid Run: spec\.timeout: must match/,
    ],
    [
      'two sources',
      TASK.replace('source: { inline: "print(1)" }', 'source: { inline: "x", configMapKeyRef: { name: c, key: k } }'),
      /exactly one of source\.inline/,
    ],
    [
      'a recorded Run',
      TASK.replace(
        'mode: { task: {} }',
        "mode: { task: {} }\n  origin: { local: { runId: 20261204-100000-a1b2c3, lockDigest: 'sha256:" +
          'a'.repeat(64) +
          "', result: { phase: Succeeded, reason: Succeeded, message: m, startTime: '2026-12-04T10:00:00Z', completionTime: '2026-12-04T10:00:00Z' } } }",
      ),
      /has spec\.origin/,
    ],
  ])('refuses %s', (_what, text, message) => {
    expect(() => parseRunFile(text, 'run.yaml')).toThrow(message);
  });
});

describe('resolveLanguage', () => {
  it.each<[string, string | undefined, string]>([
    ['python', undefined, 'python'],
    ['bash', undefined, 'bash'],
    ['team-runtime', 'bash', 'bash'],
    ['python', 'bash', 'bash'],
  ])('spec.runtime %s, --language %s: %s', (runtime, flag, expected) => {
    expect(resolveLanguage(runtime, flag)).toBe(expected);
  });

  it.each<[string, string | undefined, RegExp]>([
    ['team-runtime', undefined, /does not exist locally: say which language it runs with --language python\|bash/],
    ['python', 'ruby', /--language must be python or bash/],
  ])('refuses spec.runtime %s with --language %s', (runtime, flag, message) => {
    expect(() => resolveLanguage(runtime, flag)).toThrow(message);
  });
});

describe('run directory', () => {
  it('names runs by UTC time and random hex, as LOCAL_RUN_ID_PATTERN says', () => {
    const id = newRunId(Date.parse('2026-12-04T15:30:07.123Z'), () => 'a1b2c3');
    expect(id).toBe('20261204-153007-a1b2c3');
    expect(isLocalRunId(id)).toBe(true);
    expect(isLocalRunId(newRunId(Date.now()))).toBe(true);
  });

  it('keeps the state beside the run file', () => {
    expect(statePaths('/work/jobs/run.yaml')).toEqual({
      stateDir: '/work/jobs/.krt',
      lockFile: '/work/jobs/.krt/locks/run.yaml.lock.json',
      runsDir: '/work/jobs/.krt/runs',
    });
  });
});

import { commandProblem } from './task-process.ts';
import type { ExecuteRequest } from './execute-request.ts';

const request = (env: Record<string, string> = {}): ExecuteRequest => ({
  executionId: 'e',
  runUid: '00000000-0000-0000-0000-000000000000',
  attempt: 1,
  workdir: '/',
  entrypoint: 'x',
  args: [],
  env,
  timeoutMs: undefined,
  graceMs: undefined,
  artifacts: undefined,
  resume: undefined,
});

describe('commandProblem', () => {
  it.each([
    ['an absolute executable', { command: '/bin/sh', args: [] }, request(), undefined],
    ['a name on the Run’s PATH', { command: 'sh', args: [] }, request({ PATH: '/usr/bin:/bin' }), undefined],
    ['a name on no PATH directory', { command: 'krt-no-such-interpreter', args: [] }, request({ PATH: '/usr/bin:/bin' }), 'not found'],
    ['a directory', { command: '/tmp', args: [] }, request(), 'not found'],
    [
      'the language’s PATH wins over the Run’s',
      { command: 'sh', args: [], env: { PATH: '/nonexistent' } },
      request({ PATH: '/bin' }),
      'not found',
    ],
    ['an empty PATH', { command: 'sh', args: [] }, request({ PATH: '' }), 'not found'],
  ])('%s', (_name, command, req, problem) => {
    const found = commandProblem(command, req);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toContain(problem);
  });
});

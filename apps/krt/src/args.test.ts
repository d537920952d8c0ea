import { DEFAULT_INVOKE_TIMEOUT_MS, DEFAULT_RESPOND_WAIT_TIMEOUT_MS, DEFAULT_WAIT_TIMEOUT_MS, parseCommandLine } from './args.ts';
import type { CommandLine } from './args.ts';
import { CliError, EXIT } from './exit-codes.ts';

describe('parseCommandLine', () => {
  const cases: [string, string[], CommandLine][] = [
    ['get one Run', ['get', 'r1'], { command: { name: 'get', run: 'r1', output: 'table' }, global: {} }],
    ['get all Runs, wide', ['get', '-o', 'wide'], { command: { name: 'get', output: 'wide' }, global: {} }],
    [
      'get as json with global flags first',
      ['-n', 'ns', '--kubeconfig', '/k', 'get', 'r1', '-o', 'json'],
      { command: { name: 'get', run: 'r1', output: 'json' }, global: { namespace: 'ns', kubeconfig: '/k' } },
    ],
    [
      'get yaml with --namespace=',
      ['get', 'r1', '--namespace=team', '-oyaml'],
      { command: { name: 'get', run: 'r1', output: 'yaml' }, global: { namespace: 'team' } },
    ],
    [
      'wait ready, default timeout',
      ['wait', 'r1', '--for', 'ready'],
      { command: { name: 'wait', run: 'r1', target: 'ready', timeoutMs: DEFAULT_WAIT_TIMEOUT_MS }, global: {} },
    ],
    [
      'wait done with timeout',
      ['wait', 'r1', '--for=done', '--timeout', '1m30s'],
      { command: { name: 'wait', run: 'r1', target: 'finished', timeoutMs: 90_000 }, global: {} },
    ],
    [
      'invoke without payload',
      ['invoke', 'fn'],
      { command: { name: 'invoke', run: 'fn', input: { kind: 'none' }, timeoutMs: DEFAULT_INVOKE_TIMEOUT_MS }, global: {} },
    ],
    [
      'invoke with --data',
      ['invoke', 'fn', '--data', '{"a":1}'],
      {
        command: { name: 'invoke', run: 'fn', input: { kind: 'data', json: '{"a":1}' }, timeoutMs: DEFAULT_INVOKE_TIMEOUT_MS },
        global: {},
      },
    ],
    [
      'invoke with a negative number as --data=',
      ['invoke', 'fn', '--data=-1'],
      { command: { name: 'invoke', run: 'fn', input: { kind: 'data', json: '-1' }, timeoutMs: DEFAULT_INVOKE_TIMEOUT_MS }, global: {} },
    ],
    [
      'invoke from a file',
      ['invoke', 'fn', '-f', 'p.json', '--timeout', '5s'],
      { command: { name: 'invoke', run: 'fn', input: { kind: 'file', path: 'p.json' }, timeoutMs: 5000 }, global: {} },
    ],
    [
      'invoke from stdin with an invocation ID',
      ['invoke', 'fn', '-f', '-', '--invocation-id', 'id-1'],
      {
        command: { name: 'invoke', run: 'fn', input: { kind: 'stdin' }, timeoutMs: DEFAULT_INVOKE_TIMEOUT_MS, invocationId: 'id-1' },
        global: {},
      },
    ],
    [
      'invoke through another gateway address',
      ['invoke', 'fn', '--gateway', 'https://127.0.0.1:8443/', '--gateway-ca', 'ca.crt'],
      {
        command: {
          name: 'invoke',
          run: 'fn',
          input: { kind: 'none' },
          timeoutMs: DEFAULT_INVOKE_TIMEOUT_MS,
          gateway: 'https://127.0.0.1:8443',
          gatewayCaFile: 'ca.crt',
        },
        global: {},
      },
    ],
    ['retry', ['retry', 'r1'], { command: { name: 'retry', run: 'r1' }, global: {} }],
    [
      'retry --refresh-source',
      ['retry', 'r1', '--refresh-source'],
      { command: { name: 'retry', run: 'r1', refreshSource: true }, global: {} },
    ],
    ['retry --yes', ['retry', 'r1', '--yes'], { command: { name: 'retry', run: 'r1', yes: true }, global: {} }],
    [
      'retry -y --refresh-source',
      ['retry', '-y', 'r1', '--refresh-source'],
      { command: { name: 'retry', run: 'r1', refreshSource: true, yes: true }, global: {} },
    ],
    ['cancel', ['cancel', 'r1', '-n', 'ns'], { command: { name: 'cancel', run: 'r1' }, global: { namespace: 'ns' } }],
    [
      'cancel and wait, default timeout',
      ['cancel', 'r1', '--wait'],
      { command: { name: 'cancel', run: 'r1', wait: { timeoutMs: DEFAULT_WAIT_TIMEOUT_MS } }, global: {} },
    ],
    [
      'cancel and wait with a timeout',
      ['cancel', 'r1', '--wait', '--timeout', '30s'],
      { command: { name: 'cancel', run: 'r1', wait: { timeoutMs: 30_000 } }, global: {} },
    ],
    ['delete', ['delete', 'a.b-c'], { command: { name: 'delete', run: 'a.b-c' }, global: {} }],
    ['artifacts list', ['artifacts', 'r1'], { command: { name: 'artifacts', run: 'r1', output: 'table' }, global: {} }],
    [
      'artifacts list as json',
      ['artifacts', 'r1', '-o', 'json'],
      { command: { name: 'artifacts', run: 'r1', output: 'json' }, global: {} },
    ],
    [
      'artifacts --get to a file',
      ['artifacts', 'r1', '--get', 'report.csv', '-o', 'out/r.csv'],
      { command: { name: 'artifacts', run: 'r1', get: { id: 'report.csv', to: 'out/r.csv' } }, global: {} },
    ],
    [
      'artifacts --get to stdout',
      ['artifacts', 'r1', '--get', 'report.csv', '-o', '-'],
      { command: { name: 'artifacts', run: 'r1', get: { id: 'report.csv', to: '-' } }, global: {} },
    ],
    [
      'wait for input',
      ['wait', 'r1', '--for', 'input'],
      { command: { name: 'wait', run: 'r1', target: 'input', timeoutMs: DEFAULT_WAIT_TIMEOUT_MS }, global: {} },
    ],
    [
      'respond with --data',
      ['respond', 'r1', '--id', 'approval-1', '--data', '{"approved":true}'],
      {
        command: {
          name: 'respond',
          run: 'r1',
          responseId: 'approval-1',
          input: { kind: 'data', json: '{"approved":true}' },
          waitTimeoutMs: DEFAULT_RESPOND_WAIT_TIMEOUT_MS,
        },
        global: {},
      },
    ],
    [
      'respond from a file with a wait timeout',
      ['respond', 'r1', '--id', 'a:1', '--data-file', 'r.json', '--wait-timeout', '5s', '-n', 'ns'],
      {
        command: { name: 'respond', run: 'r1', responseId: 'a:1', input: { kind: 'file', path: 'r.json' }, waitTimeoutMs: 5000 },
        global: { namespace: 'ns' },
      },
    ],
    [
      'respond from stdin',
      ['respond', 'r1', '--id', 'x', '--data-file', '-'],
      {
        command: { name: 'respond', run: 'r1', responseId: 'x', input: { kind: 'stdin' }, waitTimeoutMs: DEFAULT_RESPOND_WAIT_TIMEOUT_MS },
        global: {},
      },
    ],
    [
      'run --local',
      ['run', '--local', '-f', 'run.yaml'],
      { command: { name: 'run', local: true, file: 'run.yaml', updateLock: false }, global: {} },
    ],
    [
      'run on the cluster',
      ['run', '-f', 'run.yaml'],
      { command: { name: 'run', local: false, file: 'run.yaml', wait: false, follow: false }, global: {} },
    ],
    [
      'run from stdin, named, followed with a bound',
      ['run', '-f', '-', '--name', 'nightly', '--follow', '--timeout', '2m'],
      { command: { name: 'run', local: false, file: '-', runName: 'nightly', wait: true, follow: true, timeoutMs: 120_000 }, global: {} },
    ],
    [
      'run --wait',
      ['run', '-f', 'r.yaml', '--wait'],
      { command: { name: 'run', local: false, file: 'r.yaml', wait: true, follow: false }, global: {} },
    ],
    ['logs', ['logs', 'r1'], { command: { name: 'logs', run: 'r1', follow: false }, global: {} }],
    [
      'logs -f of one attempt since 5m (-f is --follow here)',
      ['logs', 'r1', '-f', '--attempt', '2', '--since', '5m'],
      { command: { name: 'logs', run: 'r1', follow: true, attempt: 2, sinceMs: 300_000 }, global: {} },
    ],
    [
      'logs -f after the global flags (their values are not the command)',
      ['--kubeconfig', '/k', '-n', 'team', 'logs', 'r1', '-f'],
      { command: { name: 'logs', run: 'r1', follow: true }, global: { kubeconfig: '/k', namespace: 'team' } },
    ],
    [
      'logs of one invocation',
      ['logs', 'fn', '--invocation-id', 'inv-1', '-n', 'team'],
      { command: { name: 'logs', run: 'fn', follow: false, invocationId: 'inv-1' }, global: { namespace: 'team' } },
    ],
    [
      'run --local with a language, re-locking',
      ['run', '--local', '-f', 'jobs/run.yaml', '--language', 'bash', '--update-lock', '-n', 'team'],
      { command: { name: 'run', local: true, file: 'jobs/run.yaml', language: 'bash', updateLock: true }, global: { namespace: 'team' } },
    ],
    [
      'sync a run ID',
      ['sync', '20261204-153000-a1b2c3'],
      { command: { name: 'sync', target: '20261204-153000-a1b2c3', withoutArtifacts: false }, global: {} },
    ],
    [
      'sync a run directory without its artifacts',
      ['sync', '.krt/runs/20261204-153000-a1b2c3', '--without-artifacts'],
      { command: { name: 'sync', target: '.krt/runs/20261204-153000-a1b2c3', withoutArtifacts: true }, global: {} },
    ],
    ['help', ['help'], { command: { name: 'help' }, global: {} }],
    ['version', ['version'], { command: { name: 'version' }, global: {} }],
    ['--help on a command', ['get', '--help'], { command: { name: 'help' }, global: {} }],
  ];
  it.each(cases)('%s', (_name, argv, expected) => {
    expect(parseCommandLine(argv)).toEqual(expected);
  });

  const usage: [string, string[], RegExp][] = [
    ['no command', [], /missing command/],
    ['unknown command', ['launch', 'x'], /unknown command "launch"/],
    ['unknown flag', ['get', 'x', '--colour'], /Unknown option '--colour'/],
    ['a flag of another command', ['get', 'x', '--for', 'ready'], /krt get does not take --for/],
    ['a missing Run name', ['cancel'], /exactly one Run name/],
    ['cancel --timeout without --wait', ['cancel', 'x', '--timeout', '5s'], /--timeout only with --wait/],
    ['two Run names', ['delete', 'a', 'b'], /exactly one Run name/],
    ['version with an argument', ['version', 'x'], /krt version takes no arguments/],
    ['two Run names for get', ['get', 'a', 'b'], /at most one Run name/],
    ['an invalid Run name', ['get', 'My_Run'], /not a valid Run name/],
    ['wait without --for', ['wait', 'x'], /needs --for/],
    ['wait for something else', ['wait', 'x', '--for', 'happy'], /ready, done or input/],
    ['respond without --id', ['respond', 'x', '--data', '1'], /needs --id/],
    ['respond with an invalid --id', ['respond', 'x', '--id=bad id', '--data', '1'], /not a response ID/],
    ['respond without data', ['respond', 'x', '--id', 'a'], /--data JSON or --data-file/],
    ['respond with --data and --data-file', ['respond', 'x', '--id', 'a', '--data', '1', '--data-file', 'f'], /not both/],
    [
      'respond with a bad --wait-timeout',
      ['respond', 'x', '--id', 'a', '--data', '1', '--wait-timeout', 'later'],
      /--wait-timeout must be/,
    ],
    ['--data-file on invoke', ['invoke', 'x', '--data-file', 'f'], /krt invoke does not take --data-file/],
    ['a bad timeout', ['wait', 'x', '--for', 'done', '--timeout', 'soon'], /--timeout must be a positive duration/],
    ['a zero timeout', ['invoke', 'x', '--timeout', '0s'], /--timeout must be a positive duration/],
    ['both --data and -f', ['invoke', 'x', '--data', '1', '-f', 'p'], /not both/],
    ['a bad output format', ['get', 'x', '-o', 'xml'], /-o must be json, yaml or wide/],
    ['an ambiguous option value', ['invoke', 'x', '--data', '-1'], /ambiguous/],
    ['a plaintext --gateway', ['invoke', 'x', '--gateway', 'http://127.0.0.1:80'], /--gateway must be an https URL/],
    ['a --gateway with a path', ['invoke', 'x', '--gateway', 'https://gw/v1'], /without path/],
    ['a --gateway that is not a URL', ['invoke', 'x', '--gateway', 'gw:443'], /--gateway must be an https URL/],
    ['--gateway on another command', ['get', 'x', '--gateway', 'https://gw'], /krt get does not take --gateway/],
    ['an empty namespace', ['get', 'x', '-n', ''], /--namespace needs a value/],
    ['artifacts without a Run', ['artifacts'], /exactly one Run name/],
    ['artifacts --get without -o', ['artifacts', 'r', '--get', 'a.csv'], /needs -o FILE/],
    ['artifacts --get of an invalid ID', ['artifacts', 'r', '--get', '../x', '-o', 'f'], /not a valid artifact ID/],
    ['artifacts listed as yaml', ['artifacts', 'r', '-o', 'yaml'], /-o json/],
    ['run without -f', ['run'], /needs -f FILE \(a Run manifest, or - for stdin\)/],
    ['run with a Run name', ['run', 'r', '-f', 'x'], /from -f FILE \(or - for stdin\), not from arguments/],
    ['run --timeout without --wait', ['run', '-f', 'x', '--timeout', '1m'], /--timeout only with --wait or --follow/],
    ['run --language without --local', ['run', '-f', 'x', '--language', 'bash'], /go with --local/],
    ['run --local --follow', ['run', '--local', '-f', 'x', '--follow'], /go without --local/],
    ['run with an invalid --name', ['run', '-f', 'x', '--name', 'Bad_Name'], /not a valid Run name/],
    ['logs without a Run', ['logs'], /exactly one Run name/],
    ['logs --attempt 0', ['logs', 'r', '--attempt', '0'], /--attempt must be a positive integer/],
    ['logs --since nonsense', ['logs', 'r', '--since', 'soon'], /--since must be a positive duration/],
    ['logs with a file', ['logs', 'r', '--file', 'x'], /krt logs does not take --file/],
    ['run --local without -f', ['run', '--local'], /needs -f FILE/],
    ['run --local from stdin', ['run', '--local', '-f', '-'], /needs -f FILE/],
    ['run --local with a Run name', ['run', 'r', '--local', '-f', 'x'], /from -f FILE, not from arguments/],
    ['--update-lock on another command', ['get', 'x', '--update-lock'], /krt get does not take --update-lock/],
    ['sync without a run', ['sync'], /exactly one local run ID or run directory/],
    ['sync of two runs', ['sync', 'a', 'b'], /exactly one local run ID/],
  ];
  it.each(usage)('refuses %s (exit 2)', (_name, argv, message) => {
    let thrown: unknown;
    try {
      parseCommandLine(argv);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(CliError);
    expect((thrown as CliError).exitCode).toBe(EXIT.usage);
    expect((thrown as CliError).message).toMatch(message);
  });
});

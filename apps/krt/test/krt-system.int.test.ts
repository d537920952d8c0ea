// `krt invoke` end to end: the real CLI, the real runtime-gateway (child process), runtimed
// authorizing alice's own token with a SelfSubjectAccessReview, and the Python Runtime
// Server on a local-node Runtime Pod. The system's Runs publish the in-cluster gateway
// host, so krt reaches the test gateway with --gateway/--gateway-ca, as a user would
// through a port-forward.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { API_GROUP, RUN_PLURAL } from '@kruntimes/api';
import { System } from '@kruntimes/e2e';
import { NamespaceAccess, kubeconfigYaml } from '@kruntimes/testing';
import { runKrt } from './run-krt.ts';
import type { CliResult } from './run-krt.ts';

const CLI_TIMEOUT_MS = 120_000;

const PYTHON = `
def handle(event, context):
    if isinstance(event, dict) and event.get("fail"):
        raise ValueError("asked to fail")
    context.set_output("lang", "python")
    return {"echo": event, "invocation": context.invocation_id}
`;

let system: System;
let kubeconfig: string;
let gatewayCa: string;

beforeAll(async () => {
  system = await System.start({ prefix: 'krt-e2e' });
  await new NamespaceAccess(system.cluster, system.name).grantUser('alice', 'run-reader', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch'] },
  ]);
  kubeconfig = join(system.dir, 'alice.kubeconfig');
  await writeFile(
    kubeconfig,
    kubeconfigYaml({ server: system.cluster.info.server, caPem: system.cluster.info.caPem, user: 'alice', token: system.token('alice') }),
    { mode: 0o600 },
  );
  gatewayCa = join(system.dir, 'gateway-ca.crt');
  await writeFile(gatewayCa, system.gateway?.caPem ?? '');
  await system.createRuntime('py', { language: 'python' });
  await system.createFunctionRun('echo', 'py', PYTHON, 'main:handle');
}, 180_000);

afterAll(async () => {
  await system.stop();
});

async function krt(args: string[]): Promise<CliResult> {
  return runKrt(args, { kubeconfig, namespace: system.name, timeoutMs: CLI_TIMEOUT_MS });
}

test('krt wait, then krt invoke through the gateway: result on stdout, a function error is exit 1', async () => {
  const ready = await krt(['wait', 'echo', '--for', 'ready', '--timeout', '90s']);
  if (ready.code !== 0) process.stderr.write(`${await system.diagnose()}\n`);
  expect(ready).toMatchObject({ code: 0, stdout: 'run/echo Ready\n' });

  const gateway = ['--gateway', system.gateway?.url ?? '', '--gateway-ca', gatewayCa];
  const ok = await krt(['invoke', 'echo', '--data', '{"n":1}', '--invocation-id', 'krt-e2e-1', ...gateway]);
  expect(ok.stderr).toMatch(/^invocation krt-e2e-1 \(attempt 1\) ok\noutputs: \{"lang":"python"\}\n/);
  expect(ok.code).toBe(0);
  expect(JSON.parse(ok.stdout)).toEqual({ echo: { n: 1 }, invocation: 'krt-e2e-1' });

  const failed = await krt(['invoke', 'echo', '--data', '{"fail":true}', ...gateway]);
  expect(failed.code).toBe(1);
  expect(failed.stdout).toBe('');
  expect(failed.stderr).toMatch(
    /^error: FunctionFailed \(function, HTTP 500\): [\s\S]*ValueError: asked to fail\n \[invocation [0-9a-f-]{36}\]\n$/,
  );

  // The token krt sent reached no component's log.
  expect(await system.logLinesContaining([system.token('alice')])).toEqual([]);
}, 240_000);

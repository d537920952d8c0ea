import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { API_GROUP, API_VERSION, RUN_PLURAL, RUNTIME_PLURAL, RUNTIME_USER_RULES } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { NamespaceAccess, REPO_ROOT, ensureBinaries, pythonTestVenv } from '@kruntimes/testing';
import { System } from '../src/index.ts';

// The Python client (clients/python) tested by its own pytest suite against this system's
// gateway: the Runs and the caller's kubeconfig are made here, pytest reads them from
// KRT_TEST_* variables and must run every test (none skipped). Its sandbox sessions run on
// Runtime `sbx` (runs: 1) and `py` (runs: 3, the warning and the exclusive refusal) as bob.
const CLIENT = join(REPO_ROOT, 'clients/python');
/**
 * The sessions use the stock handler once the Python Runtime Server ships it; until then the
 * sandbox contract's test handler is each session's inline source.
 */
const HANDLER = `
import os, time

def handle(event, context):
    options = event if isinstance(event, dict) else {}
    if options.get("fail"):
        raise ValueError("the handler refuses")
    if "count" in options:
        with open(options["count"], "a") as f:
            f.write("x")
    if "release" in options:
        open(options["marker"], "w").close()
        deadline = time.monotonic() + 30
        while not os.path.exists(options["release"]) and time.monotonic() < deadline:
            time.sleep(0.02)
    if "sleep" in options:
        time.sleep(options["sleep"])
    print("handled", flush=True)
    return {"echo": event, "id": context.invocation_id}
`;

let system: System;
let scratch: string;
let echo: Run;
let secret: Run;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'python-client-'));
  system = await System.start({ prefix: 'e2e-python-client' });
  // runs: 3: echo, secret and one sandbox session.
  await system.createRuntime('py', { language: 'python', runs: 3 });
  await system.createRuntime('sbx', { language: 'python', runs: 1 });
  await system.createFunctionRun('echo', 'py', HANDLER, 'main:handle');
  await system.createFunctionRun('secret', 'py', HANDLER, 'main:handle');
  [echo, secret] = await Promise.all([system.waitReady('echo'), system.waitReady('secret')]);
  // alice may get (and so invoke) echo only.
  await system.grantGetRuns('alice', 'echo');
  await system.grantGetRuns('bob');
  // What a sandbox session needs: read the Runtime, use it (the admission policy), create, watch, cancel and delete Runs.
  await new NamespaceAccess(system.cluster, system.name).grantUser('bob', 'sandbox-user', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
    { apiGroups: [API_GROUP], resources: [RUNTIME_PLURAL], verbs: ['get'] },
    ...RUNTIME_USER_RULES,
  ]);
  await system.waitRuntimeReady('sbx');
}, 180_000);

afterAll(async () => {
  await system.stop();
  await rm(scratch, { recursive: true, force: true });
});

test('the Python client’s pytest suite passes against the gateway, every test run', async () => {
  const gateway = system.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  const kubeconfigs = await system.cluster.writeKubeconfigs(scratch);
  const gatewayCa = join(scratch, 'gateway-ca.crt');
  await writeFile(gatewayCa, gateway.caPem);
  const python = await pythonTestVenv(join(CLIENT, 'requirements-test.txt'));
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    KUBECONFIG: kubeconfigs.alice ?? '',
    // bob may read every Run of the namespace (granted below), so he learns that one does not exist.
    KRT_TEST_READER_KUBECONFIG: kubeconfigs.bob ?? '',
    KRT_TEST_FORBIDDEN_RUN: 'secret',
    KRT_KUBECTL: join(await ensureBinaries(), 'kubectl'),
    KRT_TEST_NAMESPACE: system.name,
    KRT_TEST_RUN: 'echo',
    // The Runs' endpoints name the in-cluster gateway Service: reached here at its loopback address.
    KRT_GATEWAY_URL: gateway.url,
    KRT_GATEWAY_CA_FILE: gatewayCa,
    KRT_TEST_URL: system.invokeUrl('py', echo.metadata.uid ?? ''),
    KRT_TEST_FORBIDDEN_URL: system.invokeUrl('py', secret.metadata.uid ?? ''),
    KRT_TEST_TOKEN: system.token('alice'),
    KRT_TEST_GATEWAY_CA_FILE: gatewayCa,
    KRT_TEST_SCRATCH: scratch,
    KRT_TEST_SANDBOX_RUNTIME: 'sbx',
    KRT_TEST_SHARED_RUNTIME: 'py',
    KRT_TEST_SANDBOX_KUBECONFIG: kubeconfigs.bob ?? '',
  };
  let output: string;
  try {
    const { stdout, stderr } = await promisify(execFile)(python, ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', 'tests'], {
      cwd: CLIENT,
      env,
      timeout: 300_000,
    });
    output = stdout + stderr;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    throw new Error(`pytest failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}`, { cause: error });
  }
  process.stdout.write(`[python client] ${output.trim().split('\n').at(-1) ?? ''}\n`);
  expect(output).toMatch(/^\d+ passed in /m);
  expect(output).not.toMatch(/skipped|xfail|deselected/);
  // No sandbox Run outlives its session (the cancelled one is deleted by its test: it may still be going).
  const listed: unknown = await system.objects.listNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: system.name,
    plural: RUN_PLURAL,
  });
  const left = (listed as { items: Run[] }).items.filter((run) => run.metadata.deletionTimestamp === undefined);
  expect(left.map((run) => run.metadata.name).filter((name) => name?.startsWith('sandbox-'))).toEqual([]);
}, 420_000);

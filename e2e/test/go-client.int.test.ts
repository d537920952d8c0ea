import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { API_GROUP, API_VERSION, RUN_PLURAL, RUNTIME_PLURAL, RUNTIME_USER_RULES } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { NamespaceAccess, REPO_ROOT, goEnvironment } from '@kruntimes/testing';
import { System } from '../src/index.ts';

// The Go client (clients/go) tested by its own `go test` suite against this system: sandbox
// sessions as bob on Runtime `sbx` (runs: 1) and `py` (runs: 2: the warning and the Exclusive
// refusal), and invocations through the gateway. Every test must run (none skipped). The Go
// build and module caches are Go's own, outside the repository (GOCACHE, GOMODCACHE).
const CLIENT = join(REPO_ROOT, 'clients/go');
/**
 * The sessions use the stock handler once the Python Runtime Server ships it; until then the
 * sandbox contract's test handler is each session's inline source.
 */
/** A cold build of client-go on a loaded machine takes minutes; a warm one seconds. */
const BUILD_TIMEOUT_MS = 600_000;
const TEST_TIMEOUT_MS = 300_000;

const run = promisify(execFile);
let system: System;
let scratch: string;
let goEnv: Record<string, string>;
let built: Promise<void>;

async function go(args: string[], env: Record<string, string>, timeout: number): Promise<string> {
  try {
    const { stdout, stderr } = await run('go', args, { cwd: CLIENT, env, timeout, maxBuffer: 16 * 1024 * 1024 });
    return stdout + stderr;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    throw new Error(`go ${args.join(' ')} failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}`, { cause: error });
  }
}

beforeAll(async () => {
  goEnv = goEnvironment();
  // The test binary is built while the system starts (modules from the proxy, then cached).
  const started = Date.now();
  process.stdout.write('[go client] building the clients/go test binary (a cold client-go build takes minutes)\n');
  built = (async () => {
    await go(['test', '-count=1', '-run', '^$', './...'], goEnv, BUILD_TIMEOUT_MS);
    process.stdout.write(`[go client] built in ${Math.round((Date.now() - started) / 1000)} s\n`);
    // The module's own checks: go vet, and gofmt leaves every file as it is.
    await go(['vet', './...'], goEnv, BUILD_TIMEOUT_MS);
    const unformatted = await run('gofmt', ['-l', '.'], { cwd: CLIENT, env: goEnv });
    if (unformatted.stdout.trim() !== '') throw new Error(`gofmt would change: ${unformatted.stdout}`);
  })();
  built.catch(() => undefined);
  scratch = await mkdtemp(join(tmpdir(), 'go-client-'));
  system = await System.start({ prefix: 'e2e-go-client' });
  await system.createRuntime('py', { language: 'python', runs: 2 });
  await system.createRuntime('sbx', { language: 'python', runs: 1 });
  // What a sandbox session needs: read the Runtime, use it (the admission policy), create, watch, cancel and delete Runs.
  await new NamespaceAccess(system.cluster, system.name).grantUser('bob', 'sandbox-user', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
    { apiGroups: [API_GROUP], resources: [RUNTIME_PLURAL], verbs: ['get'] },
    ...RUNTIME_USER_RULES,
  ]);
  await Promise.all([system.waitRuntimeReady('sbx'), system.waitRuntimeReady('py')]);
}, BUILD_TIMEOUT_MS);

afterAll(async () => {
  await system.stop();
  await rm(scratch, { recursive: true, force: true });
});

test(
  'the Go client’s go test suite passes against the system, every test run',
  async () => {
    await built;
    const gateway = system.gateway;
    if (gateway === undefined) throw new Error('no gateway');
    const kubeconfigs = await system.cluster.writeKubeconfigs(scratch);
    const gatewayCa = join(scratch, 'gateway-ca.crt');
    await writeFile(gatewayCa, gateway.caPem);
    const env = {
      ...goEnv,
      KUBECONFIG: kubeconfigs.bob ?? '',
      // The Runs' endpoints name the in-cluster gateway Service: reached here at its loopback address.
      KRT_GATEWAY_URL: gateway.url,
      KRT_GATEWAY_CA_FILE: gatewayCa,
      KRT_TEST_NAMESPACE: system.name,
      KRT_TEST_SANDBOX_RUNTIME: 'sbx',
      KRT_TEST_SHARED_RUNTIME: 'py',
      // alice may not get any Run: Forbidden at the gateway.
      KRT_TEST_OTHER_TOKEN: system.token('alice'),
    };
    const output = await go(['test', '-count=1', '-v', './...'], env, TEST_TIMEOUT_MS);
    const summary = output.split('\n').filter((line) => /^(--- |ok|FAIL)/.test(line));
    process.stdout.write(`[go client] ${summary.join('\n[go client] ')}\n`);
    expect(output).toMatch(/^ok\s+github\.com\/kruntimes\/kruntimes\/clients\/go\s/m);
    expect(output).not.toMatch(/--- (SKIP|FAIL)/);
    // No sandbox Run outlives its session (the ones a test deleted itself may still be going).
    const listed: unknown = await system.objects.listNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: system.name,
      plural: RUN_PLURAL,
    });
    const left = (listed as { items: Run[] }).items.filter((item) => item.metadata.deletionTimestamp === undefined);
    expect(left.map((item) => item.metadata.name)).toEqual([]);
    // The tokens never reach a log of the system (the Go client logs nothing itself).
    expect(await system.logLinesContaining([system.token('bob'), system.token('alice')])).toEqual([]);
  },
  TEST_TIMEOUT_MS + 60_000,
);

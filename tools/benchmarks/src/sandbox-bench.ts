/**
 * Benchmark (not a test): an agent sandbox's tool call through the SDK session of each
 * language (TypeScript @kruntimes/sdk's Sandbox, Python kruntimes.Sandbox, Go NewSandbox)
 * against the raw gateway request in the same language, and sandbox create -> Ready.
 *   node tools/benchmarks/src/sandbox-bench.ts [calls=400] [rounds=4] [sandboxes=8]
 *
 * A real control plane, the full system (as the gateway bench), a Python Runtime with
 * `runs: 1`. Tool calls go to one Ready sandbox Run (the stock handler kruntimes_sandbox):
 * - raw: the same tool payload as a bare HTTPS POST over one kept-open connection (the
 *   gateway bench's gateway path): node:https with a keep-alive Agent, Python's
 *   http.client.HTTPSConnection, Go's net/http with one connection;
 * - session: the session's tool call (one reused keep-alive connection, payload checks,
 *   typed errors).
 * Both with `list_files` (the handler's cheapest tool, so that the SDK's own cost shows),
 * call by call alternately, in `rounds` rounds whose first path alternates. The session's
 * own cost is session p50 - raw p50 (and the median of the call-by-call differences).
 * Then `sandboxes` sandboxes one after another, each started (Runtime read, create, watch
 * until Ready) and closed (deleted, watched until gone): create -> Ready and close p50. TypeScript first (and `exec true`, a process per
 * call), then Python (clients/python/bench/sandbox_bench.py, python3 with the client's
 * source on PYTHONPATH), then Go (clients/go/bench/sandbox, built with `go build` while the
 * system starts); each language's driver prints its samples, summarized here alike.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { API_GROUP, RUN_PLURAL, RUNTIME_PLURAL, RUNTIME_USE_VERB } from '@kruntimes/api';
import { System } from '@kruntimes/e2e';
import { Sandbox } from '@kruntimes/sdk';
import type { SandboxOptions } from '@kruntimes/sdk';
import {
  Cluster,
  ControlPlane,
  REPO_ROOT,
  call,
  goEnvironment,
  formatLatencies,
  percentile,
  kubeConfigFor,
  kubeconfigYaml,
  summarizeLatencies,
} from '@kruntimes/testing';

const CALLS = Number(process.argv[2] ?? 400);
const ROUNDS = Number(process.argv[3] ?? 4);
const SANDBOXES = Number(process.argv[4] ?? 8);
const WARMUP = Math.min(50, CALLS);
const TOOL = { tool: 'list_files', path: '.' };
const AGENT_RULES = [
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['create', 'get', 'list', 'watch', 'delete', 'patch'] },
  { apiGroups: [API_GROUP], resources: [RUNTIME_PLURAL], verbs: ['get', RUNTIME_USE_VERB] },
];
const GO_CLIENT = join(REPO_ROOT, 'clients/go');
const PYTHON_CLIENT = join(REPO_ROOT, 'clients/python');
/** A cold build of client-go on a loaded machine takes minutes; a warm one seconds. */
const BUILD_TIMEOUT_MS = 600_000;
const DRIVER_TIMEOUT_MS = 300_000;

/** One language's samples (ms): the two alternating paths, then the sandboxes started and closed. */
interface Samples {
  raw: number[];
  session: number[];
  ready: number[];
  close: number[];
}

const run = promisify(execFile);

async function timed(samples: number[], one: () => Promise<unknown>): Promise<void> {
  const t0 = performance.now();
  await one();
  samples.push(performance.now() - t0);
}

/** Runs a language's driver; its last stdout line is its samples. */
async function driver(file: string, args: string[], cwd: string, env: Record<string, string>): Promise<Samples> {
  let stdout: string;
  try {
    ({ stdout } = await run(file, args, { cwd, env, timeout: DRIVER_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }));
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}`, { cause: error });
  }
  const parsed = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Partial<Record<keyof Samples, number[] | null>>;
  return { raw: parsed.raw ?? [], session: parsed.session ?? [], ready: parsed.ready ?? [], close: parsed.close ?? [] };
}

function ms(value: number, digits = 3): string {
  return value.toFixed(digits);
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : ''}${ms(value)}`;
}

/** The table's columns: their headings and widths. */
const COLUMNS = [
  ['ms', 11],
  ['raw p50 / p99', 18],
  ['session p50 / p99', 18],
  ['own cost p50 / pairs / p99', 28],
  ['create->Ready p50 / max', 24],
  ['close p50 / max', 0],
] as const;

function cells(values: readonly string[]): string {
  return values.map((value, i) => value.padEnd(COLUMNS[i]?.[1] ?? 0)).join(' ');
}

/**
 * One row of the table: p50/p99 of each path; the session's own cost as the difference of
 * the p50s, the median of the call-by-call differences (each session call minus the raw
 * call beside it: less moved by a loaded machine) and the difference of the p99s;
 * create -> Ready and close.
 */
function row(language: string, samples: Samples): string {
  const raw = summarizeLatencies(samples.raw);
  const session = summarizeLatencies(samples.session);
  const pairs = percentile(
    samples.session.map((value, i) => value - (samples.raw[i] ?? Number.NaN)),
    0.5,
  );
  const ready = summarizeLatencies(samples.ready);
  const close = summarizeLatencies(samples.close);
  return cells([
    language,
    `${ms(raw.p50)} / ${ms(raw.p99)}`,
    `${ms(session.p50)} / ${ms(session.p99)}`,
    `${signed(session.p50 - raw.p50)} / ${signed(pairs)} / ${signed(session.p99 - raw.p99)}`,
    `${ms(ready.p50, 1)} / ${ms(ready.max, 1)}`,
    `${ms(close.p50, 1)} / ${ms(close.max, 1)}`,
  ]);
}

const load = (): string =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const loadAtStart = load();
const scratch = await mkdtemp(join(tmpdir(), 'sandbox-bench-'));
const goDriver = join(scratch, 'sandbox-bench-go');
const goEnv = goEnvironment();
const buildStarted = Date.now();
process.stdout.write(
  '[sandbox bench] building clients/go/bench/sandbox (go build, GOTOOLCHAIN=local; a cold client-go build takes minutes)\n',
);
// Built while the system starts (modules from the proxy, then cached).
const goBuilt = run('go', ['build', '-o', goDriver, './bench/sandbox'], { cwd: GO_CLIENT, env: goEnv, timeout: BUILD_TIMEOUT_MS }).then(
  () => {
    process.stdout.write(`[sandbox bench] Go driver built in ${String(Math.round((Date.now() - buildStarted) / 1000))} s\n`);
  },
);
goBuilt.catch(() => undefined);

const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
let system: System | undefined;
const closers: (() => Promise<unknown>)[] = [];
try {
  system = await System.start({ prefix: 'bench-sandbox', cluster: new Cluster(controlPlane.info) });
  const current = system;
  const gateway = current.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  await current.createRuntime('sandbox', { language: 'python', runs: 1 });
  await current.waitRuntimeReady('sandbox', 1);
  const token = await current.serviceAccountToken('agent', AGENT_RULES);
  const { server, caPem } = current.cluster.info;
  const options: SandboxOptions = {
    kubeConfig: kubeConfigFor({ server, caPem, user: 'agent', token }),
    namespace: current.name,
    runtime: 'sandbox',
    exclusive: true,
    // The Runs' endpoints name the in-cluster gateway Service: reached at its loopback address.
    gateway: { url: gateway.url, caPem: gateway.caPem },
  };

  // TypeScript, in this process.
  process.stdout.write('[sandbox bench] TypeScript\n');
  const typescript: Samples = { raw: [], session: [], ready: [], close: [] };
  const sandbox = new Sandbox(options);
  closers.push(() => sandbox.close());
  await sandbox.start();
  const url = current.invokeUrl('sandbox', sandbox.run?.metadata.uid ?? '');
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: gateway.caPem });
  closers.push(() => {
    agent.destroy();
    return Promise.resolve();
  });
  const body = Buffer.from(JSON.stringify(TOOL));
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const raw = async (): Promise<void> => {
    const answer = await call(url, { ca: gateway.caPem, headers, body, agent });
    if (answer.status !== 200) throw new Error(`raw gateway request answered ${String(answer.status)}`);
  };
  const session = async (): Promise<void> => {
    await sandbox.call(TOOL);
  };

  for (let i = 0; i < WARMUP; i += 1) {
    await raw();
    await session();
  }
  // Call by call, the two paths alternate (and which goes first alternates by round): a
  // busy machine's slow moments fall on both alike.
  const perRound = Math.ceil(CALLS / ROUNDS);
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = round % 2 === 0 ? (['raw', 'session'] as const) : (['session', 'raw'] as const);
    for (let i = 0; i < perRound; i += 1) for (const path of order) await timed(typescript[path], path === 'raw' ? raw : session);
  }
  const exec: number[] = [];
  for (let i = 0; i < Math.min(CALLS, 200); i += 1) await timed(exec, () => sandbox.exec('true'));
  await sandbox.close();
  agent.destroy();

  for (let i = 0; i < SANDBOXES; i += 1) {
    const next = new Sandbox(options);
    closers.push(() => next.close());
    await timed(typescript.ready, () => next.start());
    await timed(typescript.close, () => next.close());
  }

  // Python and Go: the same user (a kubeconfig file), the gateway at its loopback address.
  const kubeconfig = join(scratch, 'agent.kubeconfig');
  await writeFile(kubeconfig, kubeconfigYaml({ server, caPem, user: 'agent', token }), { mode: 0o600 });
  const gatewayCa = join(scratch, 'gateway-ca.crt');
  await writeFile(gatewayCa, gateway.caPem);
  const benchEnv = {
    KUBECONFIG: kubeconfig,
    KRT_GATEWAY_URL: gateway.url,
    KRT_GATEWAY_CA_FILE: gatewayCa,
    KRT_BENCH_NAMESPACE: current.name,
    KRT_BENCH_RUNTIME: 'sandbox',
    KRT_BENCH_CALLS: String(CALLS),
    KRT_BENCH_ROUNDS: String(ROUNDS),
    KRT_BENCH_SANDBOXES: String(SANDBOXES),
    KRT_BENCH_WARMUP: String(WARMUP),
  };
  process.stdout.write('[sandbox bench] Python\n');
  const python = await driver('python3', ['bench/sandbox_bench.py'], PYTHON_CLIENT, {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    PYTHONPATH: join(PYTHON_CLIENT, 'src'),
    PYTHONDONTWRITEBYTECODE: '1',
    ...benchEnv,
  });
  await goBuilt;
  process.stdout.write('[sandbox bench] Go\n');
  const golang = await driver(goDriver, [], GO_CLIENT, { ...goEnv, ...benchEnv });

  const tsRaw = summarizeLatencies(typescript.raw);
  const tsSession = summarizeLatencies(typescript.session);
  process.stdout.write(
    [
      '',
      `sandbox bench: per language ${String(CALLS)} tool calls per path alternating call by call in ${String(ROUNDS)} rounds, one sandbox Run (runs: 1), list_files; ${String(SANDBOXES)} sandboxes one after another`,
      `load average (1, 5, 15 min): ${loadAtStart} at the start, ${load()} at the end`,
      '',
      cells(COLUMNS.map(([heading]) => heading)),
      row('TypeScript', typescript),
      row('Python', python),
      row('Go', golang),
      '',
      '  raw: HTTPS POST on one kept-open connection -> gateway -> runtimed -> Runtime Server -> kruntimes_sandbox',
      '       (node:https keep-alive Agent; http.client.HTTPSConnection; net/http, one connection);',
      "       TypeScript's is the gateway bench's gateway path with this handler",
      '  session: Sandbox.call / Sandbox.call("list_files") / (*Sandbox).Call over the session\'s one connection;',
      '  own cost: session - raw, of the p50s / the median of the call-by-call differences / of the p99s',
      '  create -> Ready: Runtime read, create, watch until Ready; close: delete, watch until gone',
      `  TypeScript raw ${formatLatencies(tsRaw)}; session ${formatLatencies(tsSession)}`,
      `  TypeScript exec true (a process per call) through the session: ${formatLatencies(summarizeLatencies(exec))}`,
      '',
    ].join('\n'),
  );
} finally {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await system?.stop();
  await controlPlane.stop();
  await goBuilt.catch(() => undefined);
  await rm(scratch, { recursive: true, force: true });
}

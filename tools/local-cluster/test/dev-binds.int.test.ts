// The bind-race rule of `dev up` (issue 57): a port planned for a component beside the demo
// that another process takes before the component binds it. The component still comes up on
// new ports, or, for the one port the services were already given, refuses saying which.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOOPBACK, ensureBinaries, kubeconfigYaml, testCa } from '@kruntimes/testing';
import { DevError, spawnProgram } from '../src/dev-components.ts';
import type { Running } from '../src/dev-components.ts';
import { startPrometheus } from '../src/dev-metrics.ts';
import { terminate } from '../src/dev-processes.ts';
import { planJaeger, startJaeger } from '../src/dev-traces.ts';

let dir: string;
let binDir: string;
const said: string[] = [];
const started: Running[] = [];
const taken: Server[] = [];
const held: Socket[] = [];

beforeAll(async () => {
  binDir = await ensureBinaries();
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dev-binds-test-'));
  await mkdir(join(dir, 'logs'));
  said.length = 0;
});
afterEach(async () => {
  await terminate(
    started.splice(0).map((component) => component.pid),
    5_000,
  );
  for (const socket of held.splice(0)) socket.destroy();
  await Promise.all(taken.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  await rm(dir, { recursive: true, force: true });
});

/** What another process does: listen on the port first. */
async function take(port: number): Promise<void> {
  // It accepts and holds what dials it (a readiness probe of the component, say) until the test ends.
  const server = createServer((socket) => {
    held.push(socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, LOOPBACK, resolve);
  });
  taken.push(server);
}

/** The port of `--flag=127.0.0.1:PORT` among `args`. */
function portIn(args: string[], flag: string): number {
  const arg = args.find((candidate) => candidate.startsWith(`${flag}=`));
  if (arg === undefined) throw new Error(`no ${flag} in ${args.join(' ')}`);
  return Number(arg.slice(arg.lastIndexOf(':') + 1));
}

/** Starts what it is asked to, but the first time takes the port of `flag` just before. */
function startTakingFirst(flag: string) {
  let first = true;
  return async (name: string, program: string, args: string[], env: Record<string, string> = {}): Promise<Running> => {
    if (first) await take(portIn(args, flag));
    first = false;
    const component = spawnProgram(dir, name, program, args, env);
    started.push(component);
    return component;
  };
}

const discard = async (component: Running): Promise<void> => {
  await terminate([component.pid], 5_000);
};
const say = (line: string): void => {
  said.push(line);
};

test('Jaeger whose admin port was taken just before it bound it starts again on new ports and answers', async () => {
  const plan = await planJaeger();
  const jaeger = await startJaeger({
    binDir,
    plan,
    signal: AbortSignal.timeout(90_000),
    say,
    start: startTakingFirst('--admin.http.host-port'),
    discard,
  });
  expect(jaeger.otlpEndpoint).toBe(plan.otlpEndpoint);
  expect((await fetch(`${jaeger.queryUrl}/api/services`)).ok).toBe(true);
  expect(said).toEqual([
    expect.stringMatching(
      /^jaeger exited \(.*\): a port it was given was taken: .*address already in use.*; starting it again on new ports \(start 2 of 3\)$/,
    ) as string,
  ]);
}, 120_000);

test('Jaeger whose planned OTLP port was taken before it started refuses, saying which port, and starts nothing', async () => {
  const plan = await planJaeger();
  await take(plan.otlpHttpPort);
  const starting = startJaeger({ binDir, plan, signal: AbortSignal.timeout(30_000), say, start: startTakingFirst('--none'), discard });
  await expect(starting).rejects.toThrow(DevError);
  await expect(starting).rejects.toThrow(
    `its OTLP port 127.0.0.1:${String(plan.otlpHttpPort)}, given to the services at their start, is taken by another process`,
  );
  expect(started).toEqual([]);
});

test('Prometheus whose port was taken just before it bound it starts again on a new one and is ready', async () => {
  // Its Pod discovery needs a kubeconfig; nothing answers there, which only leaves it without targets.
  const kubeconfigFile = join(dir, 'prometheus.kubeconfig');
  const { certPem } = await testCa('unused');
  await writeFile(kubeconfigFile, kubeconfigYaml({ server: `https://${LOOPBACK}:1`, caPem: certPem, user: 'prometheus', token: 'unused' }));
  const prometheus = await startPrometheus({
    dir,
    binDir,
    systemNamespace: 'kruntimes-system',
    services: [],
    kubeconfigFile,
    signal: AbortSignal.timeout(90_000),
    say,
    start: startTakingFirst('--web.listen-address'),
    discard,
  });
  expect((await fetch(`${prometheus.url}/-/ready`)).ok).toBe(true);
  expect(said).toEqual([
    expect.stringMatching(
      /^prometheus exited \(.*\): a port it was given was taken: .*already in use.*; starting it again on new ports \(start 2 of 3\)$/i,
    ) as string,
  ]);
}, 120_000);

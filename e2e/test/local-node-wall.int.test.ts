// The local cluster gives user code nothing of the host (issue 51): Runtime Pods with
// `hostUsers: false` (the controller-manager's default template, runIsolation perRunUser) run
// on the local node in user namespaces of their own. A Run on one Pod attacks the host and
// another Pod: the control plane's admin credentials and CA key, runtimed's token of its own
// Pod and of the other, the other Pod's Runtime Server API token and API, its directories,
// and the other Pod's processes (signals, /proc/PID/environ), its own Runtime Server's
// command line and a user namespace of its own. Each is refused, and the victim Run on the
// other Pod ends as it would alone.
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { DEFAULTS } from '@kruntimes/api';
import { Cluster, waitFor } from '@kruntimes/testing';
import { System } from '../src/index.ts';

const VICTIM_RUNTIME = 'victim-sh';
const ATTACKER_RUNTIME = 'attacker-sh';
const SECRET = `victim-secret-${String(process.pid)}`;
const FIRST_MAPPED_ID = 1_000_000_000;

/** Says it is up, waits (bounded) for the test's go, then reports its secret as it would alone. */
const VICTIM = `for i in $(seq 600); do [ -e "$SIGNALS/go" ] && break; sleep 0.1; done
printf '{"secret":"%s","waited":"%s"}' "$SECRET" "$i" > "$KRT_OUTPUTS_FILE"
`;

/** A gRPC call without the API token (what user code can make): prints the grpc-status it got. */
const GRPC_CALL = `const http2 = require('node:http2');
const session = http2.connect('http://' + process.argv[1]);
session.on('error', (e) => { console.log('error ' + e.code); process.exit(0); });
const call = session.request({ ':method': 'POST', ':path': '/kruntimes.runtimeserver.v1.RuntimeServer/GetExecution', 'content-type': 'application/grpc', te: 'trailers' });
let status = 'none';
call.on('response', (h) => { if (h['grpc-status'] !== undefined) status = h['grpc-status']; });
call.on('trailers', (t) => { status = t['grpc-status']; });
call.on('data', () => undefined);
call.on('close', () => { console.log('grpc-status ' + status); session.close(); });
call.end(Buffer.alloc(5));
setTimeout(() => { console.log('timeout'); process.exit(0); }, 5000).unref();`;

/**
 * The attacker (at most 16 outputs: a Run's limit): each way in, reported as the errno its shell saw (EACCES, EPERM), "open"
 * when it got through, and the Runtime Server's answer to a call without the token.
 */
const ATTACKER = `out='{"runs_as":"'"$(id -u)"'"'
try() {
  err=$(eval "$2" 2>&1 >/dev/null) && r=open || case "$err" in
    *"Permission denied"*) r=EACCES ;; *"Operation not permitted"*) r=EPERM ;; *"No such file"*) r=ENOENT ;;
    *"No such process"*) r=ESRCH ;; *"No space left"*) r=ENOSPC ;; *) r="other" ;; esac
  out="$out,\\"$1\\":\\"$r\\""
}
try admin_credentials 'cat "$CLUSTER_INFO"'
try ca_key 'cat "$CA_KEY"'
try own_runtimed_token 'cat "$OWN_TOKEN"'
try own_workspace 'ls "$OWN_WORKSPACE"'
try other_runtimed_token 'cat "$OTHER_TOKEN"'
try other_api_token 'cat "$OTHER_API_TOKEN"'
try other_volumes 'ls "$OTHER_POD_DIR/volumes/workspace"'
try other_pod_dir 'ls "$OTHER_POD_DIR"'
try signal_victim 'kill -STOP "$VICTIM_PID"'
try environ_victim 'cat /proc/$VICTIM_PID/environ'
try environ_other_server 'cat /proc/$OTHER_SERVER_PID/environ'
try environ_other_runtimed 'cat /proc/$OTHER_RUNTIMED_PID/environ'
try own_server_cmdline 'cat /proc/1/cmdline'
try user_namespace 'unshare --user true'
api=$("$NODE" -e "$GRPC_CALL" "$OTHER_SERVER" 2>&1 | tail -n1)
printf '%s,"other_api":"%s"}' "$out" "$api" > "$KRT_OUTPUTS_FILE"
`;

let system: System;
let signals: string;

beforeAll(async () => {
  system = await System.start({ prefix: 'node-wall', gateway: false, runIsolation: 'perRunUser' });
  // The test's go for the victim: a directory every user may read.
  signals = join(system.dir, 'signals');
  await mkdir(signals, { mode: 0o755 });
  await system.createRuntime(VICTIM_RUNTIME, { language: 'bash', replicas: 1, runs: 2 });
  await system.createRuntime(ATTACKER_RUNTIME, { language: 'bash', replicas: 1, runs: 2 });
  await system.waitRuntimeReady(VICTIM_RUNTIME, 1);
  await system.waitRuntimeReady(ATTACKER_RUNTIME, 1);
}, 240_000);

afterAll(async () => {
  await system.stop({ keepLogs: process.env.KRT_KEEP_LOGS === '1' });
});

async function createTask(name: string, runtime: string, source: string, env: Record<string, string>): Promise<void> {
  await system.createTaskRun(name, runtime, source, { env: Object.entries(env).map(([key, value]) => ({ name: key, value })) });
}

function containerPid(pod: V1Pod, container: string): number {
  const id = pod.status?.containerStatuses?.find((status) => status.name === container)?.containerID ?? '';
  const pid = Number.parseInt(id.replace('local://', ''), 10);
  if (!(pid > 0)) throw new Error(`no process of ${container} in ${pod.metadata?.name ?? ''}`);
  return pid;
}

/** The container's own process: pid 1 of its PID namespace, the one child of the unshare the node tracks. */
async function containerProcess(pod: V1Pod, container: string): Promise<number> {
  const pid = containerPid(pod, container);
  const [child] = (await readFile(`/proc/${String(pid)}/task/${String(pid)}/children`, 'utf8')).trim().split(' ');
  if (child === undefined || child === '') throw new Error(`${container} in ${pod.metadata?.name ?? ''}: no process under ${String(pid)}`);
  return Number(child);
}

function podDir(pod: V1Pod): string {
  const { namespace = '', name = '', uid = '' } = pod.metadata ?? {};
  return join(system.dir, 'node', 'pods', `${namespace}_${name}_${uid}`);
}

/** The host uid of a process (the first of /proc/PID/status's Uid line). */
async function hostUid(pid: number): Promise<number> {
  const status = await readFile(`/proc/${String(pid)}/status`, 'utf8');
  return Number.parseInt(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? '-1', 10);
}

/** The process of a Run: the one whose environment names its UID (read as the test's root). */
async function runProcess(runUid: string): Promise<number | undefined> {
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const environ = await readFile(`/proc/${name}/environ`, 'utf8').catch(() => '');
    if (environ.split('\0').includes(`KRT_RUN_UID=${runUid}`)) return Number(name);
  }
  return undefined;
}

it('a Run on a hostUsers: false Pod gets nothing of the host nor of another Pod; the victim ends as alone', async () => {
  const [victimPod] = await system.waitRuntimeReady(VICTIM_RUNTIME, 1);
  const [attackerPod] = await system.waitRuntimeReady(ATTACKER_RUNTIME, 1);
  if (victimPod === undefined || attackerPod === undefined) throw new Error('no Pods');
  expect(victimPod.spec?.hostUsers).toBe(false);

  // Never the agent's user: each container is its own Pod's mapped uid, two Pods two ranges.
  const ids = await Promise.all(
    [victimPod, attackerPod].flatMap((pod) => ['runtimed', 'runtime-server'].map(async (c) => hostUid(await containerProcess(pod, c)))),
  );
  const [victimRuntimed = 0, victimServer = 0, attackerRuntimed = 0, attackerServer = 0] = ids;
  expect(victimServer).toBeGreaterThanOrEqual(FIRST_MAPPED_ID);
  expect((victimServer - FIRST_MAPPED_ID) % 65_536).toBe(0);
  expect(victimRuntimed).toBe(victimServer + 65_532);
  expect(attackerRuntimed).toBe(attackerServer + 65_532);
  expect(attackerServer).not.toBe(victimServer);

  await createTask('victim', VICTIM_RUNTIME, VICTIM, { SECRET, SIGNALS: signals });
  const victim = await system.waitForRun('victim', 'Running', (run) => run.status?.phase === 'Running');
  const victimUid = victim.metadata.uid ?? '';
  const victimPid = await waitFor("the victim's process", async () => runProcess(victimUid), { timeoutMs: 20_000, intervalMs: 100 });
  expect(await hostUid(victimPid)).toBeGreaterThanOrEqual(victimServer + 20_000);

  const cluster = Cluster.fromEnvironment();
  const victimDir = podDir(victimPod);
  const attackerDir = podDir(attackerPod);
  await createTask('attacker', ATTACKER_RUNTIME, ATTACKER, {
    CLUSTER_INFO: join(cluster.info.dir, 'cluster.json'),
    CA_KEY: join(cluster.info.dir, 'pki', 'ca.key'),
    OWN_TOKEN: join(attackerDir, 'volumes', 'runtimed-api-access', 'token'),
    OWN_WORKSPACE: join(attackerDir, 'volumes', 'workspace'),
    OTHER_TOKEN: join(victimDir, 'volumes', 'runtimed-api-access', 'token'),
    OTHER_API_TOKEN: join(victimDir, 'volumes', 'runtime-server-api', 'token'),
    OTHER_POD_DIR: victimDir,
    VICTIM_PID: String(victimPid),
    OTHER_SERVER_PID: String(containerPid(victimPod, 'runtime-server')),
    OTHER_RUNTIMED_PID: String(containerPid(victimPod, 'runtimed')),
    OTHER_SERVER: `${victimPod.status?.podIP ?? ''}:${String(DEFAULTS.runtimeServerPort)}`,
    NODE: process.execPath,
    GRPC_CALL,
  });
  const attacker = await system.waitForRun('attacker', 'done', (run) => ['Succeeded', 'Failed'].includes(run.status?.phase ?? ''));
  const outputs = attacker.status?.outputs ?? {};
  expect(outputs).toEqual({
    runs_as: expect.stringMatching(/^2\d{4}$/) as unknown,
    admin_credentials: 'EACCES',
    ca_key: 'EACCES',
    own_runtimed_token: 'EACCES',
    own_workspace: 'EACCES',
    other_runtimed_token: 'EACCES',
    other_api_token: 'EACCES',
    other_volumes: 'EACCES',
    other_pod_dir: 'EACCES',
    // Another Pod's processes are in another PID namespace: not even there to be refused.
    signal_victim: 'ESRCH',
    environ_victim: 'ENOENT',
    environ_other_server: 'ENOENT',
    environ_other_runtimed: 'ENOENT',
    // Its own Runtime Server is pid 1 of its namespace, hidden by its /proc (hidepid=invisible).
    own_server_cmdline: 'ENOENT',
    // user.max_user_namespaces is 0 in the Pod's user namespace.
    user_namespace: 'ENOSPC',
    // 16: Unauthenticated, without the Pod's API token.
    other_api: 'grpc-status 16',
  });
  expect(attacker.status?.phase).toBe('Succeeded');

  // The token files exist: each refusal above is a wall, not a wrong path.
  for (const file of [
    join(victimDir, 'volumes', 'runtimed-api-access', 'token'),
    join(victimDir, 'volumes', 'runtime-server-api', 'token'),
  ])
    expect((await readFile(file, 'utf8')).length).toBeGreaterThan(0);

  await writeFile(join(signals, 'go'), '');
  const ended = await system.waitForRun('victim', 'done', (run) => ['Succeeded', 'Failed'].includes(run.status?.phase ?? ''));
  expect(ended.status?.phase).toBe('Succeeded');
  expect(ended.status?.outputs?.secret).toBe(SECRET);
  expect(JSON.stringify(attacker.status)).not.toContain(SECRET);
}, 180_000);

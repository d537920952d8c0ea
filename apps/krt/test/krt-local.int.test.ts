// `krt run --local` and `krt sync` as a user runs them: the real CLI (its own process), the
// real Runtime Server processes, and for the comparison and the sync the full system of
// the integration project (control plane, scheduler, controller-manager, runtimed and the
// same Runtime Servers on local-node Runtime Pods, a real object store). Loopback only.
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, ARTIFACT_STORE_PLURAL, ORIGIN_LABEL, RUN_PLURAL, RUNTIME_USER_RULES } from '@kruntimes/api';
import type { ArtifactStore, Run, RunSpec } from '@kruntimes/api';
import { OriginController } from '@kruntimes/controller-manager-core';
import { System } from '@kruntimes/e2e';
import { isTerminal } from '@kruntimes/run-state';
import { NamespaceAccess, ObjectStore, kubeconfigYaml } from '@kruntimes/testing';
import { stringify } from 'yaml';
import { runKrt } from './run-krt.ts';
import type { CliResult } from './run-krt.ts';

const CLI_TIMEOUT_MS = 120_000;
const BUCKET = 'local-mode';
const STORE = 'results';

const PYTHON = `import json, os, sys
import krt
print("python task", sys.argv[1:])
print("a warning", file=sys.stderr)
with open("report.csv", "w") as f:
    f.write("day,total\\n2026-12-03,42\\n")
krt.artifacts.put("report.csv", "report.csv")
with open(os.environ["KRT_OUTPUTS_FILE"], "w") as f:
    json.dump({"args": ",".join(sys.argv[1:]), "greeting": os.environ["GREETING"], "run": os.environ["KRT_RUN_NAME"], "attempt": os.environ["KRT_ATTEMPT"]}, f)
`;

const BASH = `echo "bash task $*"
echo "a warning" >&2
printf 'region,total\\nnorth,12\\n' > report.csv
krt-artifact put report.csv report.csv > /dev/null
printf '{"args":"%s","greeting":"%s","run":"%s","attempt":"%s"}' "$1,$2" "$GREETING" "$KRT_RUN_NAME" "$KRT_ATTEMPT" > "$KRT_OUTPUTS_FILE"
`;

const artifacts: RunSpec['artifacts'] = {
  store: STORE,
  outputs: [
    { id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' },
    { id: 'debug.log', maxBytes: 1024, mediaType: 'text/plain', optional: true },
  ],
};

/** The tasks run both ways: same spec on the cluster and in a run file. */
const TASKS: Record<string, RunSpec> = {
  'report-py': {
    runtime: 'python',
    source: { inline: PYTHON },
    mode: { task: { args: ['a', 'b'] } },
    env: [{ name: 'GREETING', value: 'hello' }],
    artifacts,
  },
  'report-sh': {
    runtime: 'bash',
    source: { inline: BASH },
    mode: { task: { args: ['c', 'd'] } },
    env: [{ name: 'GREETING', value: 'hi' }],
    artifacts,
  },
  'fails-py': { runtime: 'python', source: { inline: 'import sys\nprint("failing")\nsys.exit(3)\n' }, mode: { task: {} } },
  'missing-sh': { runtime: 'bash', source: { inline: 'echo "forgot to upload"\n' }, mode: { task: {} }, artifacts },
};

let system: System;
let store: ObjectStore;
let dir: string;
let kubeconfig: string;
let origins: OriginController;

beforeAll(async () => {
  store = await ObjectStore.start();
  await store.createBucket(BUCKET);
  system = await System.start({ prefix: 'krt-local', gateway: false });
  await system.core.createNamespacedSecret({
    namespace: system.name,
    body: { metadata: { name: 'store-s3' }, stringData: { ...store.credentials } },
  });
  const artifactStore: ArtifactStore = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'ArtifactStore',
    metadata: { name: STORE },
    spec: { endpoint: store.endpoint, bucket: BUCKET, credentialsSecretRef: { name: 'store-s3' } },
  };
  await system.objects.createNamespacedCustomObject({ ...custom(ARTIFACT_STORE_PLURAL), body: artifactStore });
  // The controller-manager's run-origin controller, as apps/controller-manager runs it next to the others.
  origins = new OriginController({ kubeConfig: system.admin, namespace: system.name, logger: system.loggers['controller-manager']! });
  await origins.start();
  system.adopt(origins);
  await system.createRuntime('python', { language: 'python', runs: 4 });
  await system.createRuntime('bash', { language: 'bash', runs: 4 });
  dir = await mkdtemp(join(tmpdir(), 'krt-local-'));
  kubeconfig = join(dir, 'alice.kubeconfig');
  await writeFile(
    kubeconfig,
    kubeconfigYaml({ server: system.cluster.info.server, caPem: system.cluster.info.caPem, user: 'alice', token: system.token('alice') }),
    { mode: 0o600 },
  );
  // What `krt sync` needs: create and read Runs.
  await new NamespaceAccess(system.cluster, system.name).grantUser('alice', 'run-syncer', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'create'] },
    // Creating a Run needs `use` on its Runtime (the admission policy).
    ...RUNTIME_USER_RULES,
    // What locking a configMapKeyRef source needs.
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
  ]);
}, 300_000);

afterAll(async () => {
  await system.stop();
  await store.stop();
  await rm(dir, { recursive: true, force: true });
});

function custom(plural: string): { group: string; version: string; namespace: string; plural: string } {
  return { group: API_GROUP, version: API_VERSION, namespace: system.name, plural };
}

async function krt(args: string[]): Promise<CliResult> {
  return runKrt(args, { kubeconfig, namespace: system.name, timeoutMs: CLI_TIMEOUT_MS });
}

/** A run file in its own directory (its .krt/ beside it). */
async function runFile(name: string, spec: RunSpec): Promise<string> {
  const jobDir = join(dir, name);
  await mkdir(jobDir, { recursive: true });
  const file = join(jobDir, 'run.yaml');
  await writeFile(file, stringify({ apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', metadata: { name }, spec }));
  return file;
}

/** The run directories under the run file's .krt/runs, oldest first. */
async function runDirs(file: string): Promise<string[]> {
  const runs = join(file, '..', '.krt', 'runs');
  return (await readdir(runs).catch(() => [])).sort().map((id) => join(runs, id));
}

async function localStatus(runDir: string): Promise<NonNullable<Run['status']>> {
  return JSON.parse(await readFile(join(runDir, 'status.json'), 'utf8')) as NonNullable<Run['status']>;
}

/** What must be the same on the cluster and locally. */
function comparable(status: Run['status']): object {
  return {
    phase: status?.phase,
    reason: status?.reason,
    message: status?.message,
    exitCode: status?.exitCode,
    outputs: status?.outputs,
    artifacts: status?.artifacts?.map(({ id, digest, size, mediaType }) => ({ id, digest, size, mediaType })),
  };
}

test('krt run --local of the same Python and Bash tasks gives the cluster’s phase, exit code, outputs and artifact digests', async () => {
  for (const [name, spec] of Object.entries(TASKS)) {
    await system.objects.createNamespacedCustomObject({
      ...custom(RUN_PLURAL),
      body: { apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', metadata: { name }, spec },
    });
  }
  const onCluster: Record<string, Run> = {};
  for (const name of Object.keys(TASKS)) {
    onCluster[name] = await system
      .waitForRun(name, 'terminal', (run) => isTerminal(run.status?.phase ?? 'Pending'), 180_000)
      .catch(async (error: unknown) => {
        process.stderr.write(`${await system.diagnose()}\n`);
        throw error;
      });
  }
  for (const [name, spec] of Object.entries(TASKS)) {
    const file = await runFile(name, spec);
    const result = await krt(['run', '--local', '-f', file]);
    const expectedCode = onCluster[name]?.status?.phase === 'Succeeded' ? 0 : 1;
    expect([name, result.code]).toEqual([name, expectedCode]);
    const [runDir] = await runDirs(file);
    const local = await localStatus(runDir!);
    expect([name, comparable(local)]).toEqual([name, comparable(onCluster[name]?.status)]);
    expect(local.startTime).toBeDefined();
    expect(local.completionTime).toBeDefined();
    // The task's lines: streamed by krt and kept in the run directory.
    const stdout = await readFile(join(runDir!, 'stdout.log'), 'utf8');
    expect(result.stdout).toContain(stdout.split('\n')[0]);
    for (const artifact of local.artifacts ?? []) {
      const body = await readFile(join(runDir!, 'artifacts', artifact.id));
      expect(body.length).toBe(artifact.size);
    }
  }
  expect(onCluster['report-py']?.status).toMatchObject({
    phase: 'Succeeded',
    outputs: { args: 'a,b', greeting: 'hello', run: 'report-py', attempt: '1' },
  });
  expect(onCluster['report-sh']?.status).toMatchObject({
    phase: 'Succeeded',
    outputs: { args: 'c,d', greeting: 'hi', run: 'report-sh', attempt: '1' },
  });
  expect(onCluster['fails-py']?.status).toMatchObject({ phase: 'Failed', reason: 'NonZeroExit', exitCode: 3 });
  expect(onCluster['missing-sh']?.status).toMatchObject({ phase: 'Failed', reason: 'ArtifactMissing', exitCode: 0 });
}, 600_000);

test('a source changed after locking is refused (exit 6, nothing run); --update-lock re-pins it', async () => {
  const spec: RunSpec = { runtime: 'python', source: { inline: 'print("v1")\n' }, mode: { task: {} } };
  const file = await runFile('locked', spec);
  const first = await krt(['run', '--local', '-f', file]);
  expect(first.code).toBe(0);
  expect(first.stderr).toMatch(/^lock created: .*\.krt\/locks\/run\.yaml\.lock\.json \(sha256:[0-9a-f]{64}\)$/m);
  const lockFile = join(file, '..', '.krt', 'locks', 'run.yaml.lock.json');
  const locked = await readFile(lockFile, 'utf8');

  await writeFile(
    file,
    stringify({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name: 'locked' },
      spec: { ...spec, source: { inline: 'print("v2")\n' } },
    }),
  );
  const refused = await krt(['run', '--local', '-f', file]);
  expect(refused.code).toBe(6);
  expect(refused.stdout).toBe('');
  expect(refused.stderr).toMatch(
    /^error: the run file does not match its lock .*run\.yaml\.lock\.json: spec\.source\.inline changed \(locked sha256:[0-9a-f]{12}, now sha256:[0-9a-f]{12}\)\. Nothing was run\. .*--update-lock\n$/,
  );
  expect(await runDirs(file)).toHaveLength(1);
  expect(await readFile(lockFile, 'utf8')).toBe(locked);

  const relocked = await krt(['run', '--local', '-f', file, '--update-lock']);
  expect(relocked.code).toBe(0);
  expect(relocked.stdout).toBe('v2\n');
  expect(relocked.stderr).toMatch(/^lock updated: /m);
  expect(await readFile(lockFile, 'utf8')).not.toBe(locked);
  const again = await krt(['run', '--local', '-f', file]);
  expect(again.code).toBe(0);
  expect(again.stderr).toMatch(/^lock matched: /m);
  const dirs = await runDirs(file);
  expect(dirs).toHaveLength(3);
  // Each run directory keeps the lock it ran with.
  expect(await readFile(join(dirs[0]!, 'lock.json'), 'utf8')).toBe(locked);
}, 300_000);

test('a ConfigMap source is read once, at lock time, with the user’s kubeconfig; later runs use the pinned text without the cluster; --update-lock reads it again', async () => {
  const configMap = (text: string) => ({ metadata: { name: 'code' }, data: { 'main.sh': text } });
  await system.core.createNamespacedConfigMap({ namespace: system.name, body: configMap('echo v1\n') });
  const file = await runFile('from-configmap', {
    runtime: 'bash',
    source: { configMapKeyRef: { name: 'code', key: 'main.sh' } },
    mode: { task: {} },
  });
  const locked = await krt(['run', '--local', '-f', file]);
  expect([locked.code, locked.stdout]).toEqual([0, 'v1\n']);
  expect(locked.stderr).toMatch(/^lock created: /m);
  const lock = JSON.parse(await readFile(join(file, '..', '.krt', 'locks', 'run.yaml.lock.json'), 'utf8')) as { source: unknown };
  expect(lock.source).toEqual({
    configMapKeyRef: {
      namespace: system.name,
      name: 'code',
      key: 'main.sh',
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) as unknown,
      bytes: 8,
    },
  });

  await system.core.replaceNamespacedConfigMap({ namespace: system.name, name: 'code', body: configMap('echo v2\n') });
  // A kubeconfig whose API server does not exist (a closed loopback port): the pinned text needs no cluster.
  const offline = join(dir, 'offline.kubeconfig');
  await writeFile(
    offline,
    kubeconfigYaml({ server: 'https://127.0.0.1:1', caPem: system.cluster.info.caPem, user: 'alice', token: 'unused' }),
    { mode: 0o600 },
  );
  const pinned = await runKrt(['run', '--local', '-f', file], { kubeconfig: offline, namespace: system.name, timeoutMs: CLI_TIMEOUT_MS });
  expect([pinned.code, pinned.stdout]).toEqual([0, 'v1\n']);
  expect(pinned.stderr).toMatch(/^lock matched: /m);

  const relocked = await krt(['run', '--local', '-f', file, '--update-lock']);
  expect([relocked.code, relocked.stdout]).toEqual([0, 'v2\n']);
  expect(relocked.stderr).toMatch(/^lock updated: /m);
  expect(await readdir(join(file, '..', '.krt', 'cache', 'sha256'))).toHaveLength(2);
}, 300_000);

test('a function Run and an invalid spec are refused before anything runs', async () => {
  const fn = await runFile('fn', {
    runtime: 'python',
    source: { inline: 'def h(e, c): return 1' },
    mode: { function: { handler: 'main:h' } },
  });
  const refusedFn = await krt(['run', '--local', '-f', fn]);
  expect(refusedFn.code).toBe(2);
  expect(refusedFn.stderr).toMatch(/is a function Run: krt run --local runs task Runs only/);
  const invalid = await runFile('invalid', { runtime: 'python', source: { inline: 'x' }, mode: { task: {} }, timeout: 'forever' });
  const refusedInvalid = await krt(['run', '--local', '-f', invalid]);
  expect(refusedInvalid.code).toBe(2);
  expect(refusedInvalid.stderr).toMatch(/is not a valid Run: spec\.timeout: must match/);
  const unknown = await runFile('unknown', { runtime: 'team-python', source: { inline: 'x' }, mode: { task: {} } });
  const refusedUnknown = await krt(['run', '--local', '-f', unknown]);
  expect(refusedUnknown.code).toBe(2);
  expect(refusedUnknown.stderr).toMatch(/--language python\|bash/);
  for (const file of [fn, invalid, unknown]) expect(await runDirs(file)).toEqual([]);
});

test('krt sync creates one Run with the recorded origin, which becomes the recorded phase without being scheduled; a retried sync creates no second', async () => {
  const file = await runFile('to-sync', {
    runtime: 'python',
    source: { inline: 'import json, os\njson.dump({"n": "7"}, open(os.environ["KRT_OUTPUTS_FILE"], "w"))\nexit(4)\n' },
    mode: { task: {} },
  });
  const ran = await krt(['run', '--local', '-f', file]);
  expect(ran.code).toBe(1);
  const [runDir] = await runDirs(file);
  const local = await localStatus(runDir!);
  expect(local).toMatchObject({ phase: 'Failed', reason: 'NonZeroExit', exitCode: 4 });
  const runId = runDir!.split('/').pop()!;

  const synced = await krt(['sync', runDir!]);
  expect([synced.code, synced.stdout]).toEqual([0, `run/to-sync-${runId} created\n`]);
  const name = `to-sync-${runId}`;
  const recorded = await system.waitForRun(name, 'the recorded phase', (run) => run.status?.phase === 'Failed');
  expect(recorded.spec.origin?.local.runId).toBe(runId);
  expect(recorded.spec.origin?.local.lockDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
  expect(recorded.metadata.labels?.[ORIGIN_LABEL]).toBe('local');
  expect(comparable(recorded.status)).toEqual(comparable(local));
  expect(recorded.status).toMatchObject({ startTime: local.startTime, completionTime: local.completionTime, attempt: 1 });
  // Never scheduled: no Pod was ever assigned (a bind would have left assignedPod on the terminal status).
  expect(recorded.status?.assignedPod).toBeUndefined();

  const retried = await krt(['sync', runDir!]);
  expect([retried.code, retried.stdout]).toEqual([0, `run/${name} already synced\n`]);
  const objects = system.admin.makeApiClient(CustomObjectsApi);
  const labelled = (await objects.listNamespacedCustomObject({ ...custom(RUN_PLURAL), labelSelector: ORIGIN_LABEL })) as { items: Run[] };
  expect(labelled.items.map((run) => run.metadata.name)).toEqual([name]);

  // Nothing credential-like was written into the run directory.
  for (const entry of await readdir(runDir!, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) expect(await readFile(join(entry.parentPath, entry.name), 'utf8')).not.toContain(system.token('alice'));
  }
}, 300_000);

test('krt sync of a succeeded run with artifacts: refused without --without-artifacts; with it, recorded without them', async () => {
  const file = await runFile('with-artifacts', TASKS['report-py']!);
  expect((await krt(['run', '--local', '-f', file])).code).toBe(0);
  const [runDir] = await runDirs(file);
  const refused = await krt(['sync', runDir!]);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toMatch(/declares artifacts .* --without-artifacts/);
  const synced = await krt(['sync', runDir!, '--without-artifacts']);
  expect(synced.code).toBe(0);
  const name = synced.stdout
    .trim()
    .replace(/^run\//, '')
    .replace(/ created$/, '');
  const recorded = await system.waitForRun(name, 'Succeeded', (run) => run.status?.phase === 'Succeeded');
  expect(recorded.spec.artifacts).toBeUndefined();
  expect(recorded.status?.outputs).toEqual((await localStatus(runDir!)).outputs);
}, 300_000);

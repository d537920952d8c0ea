// Artifacts end to end: real runtimed and runtime-server-python processes, the real
// control plane and a real S3-compatible store (SeaweedFS). Each test says which layer
// refused: the store (a signed bound), runtimed (the grant, the check before Succeeded)
// or the Runtime Server (the execution's local endpoint).
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, ARTIFACT_STORE_PLURAL, artifactObjectKey } from '@kruntimes/api';
import type { ArtifactStore, Run, RunSpec } from '@kruntimes/api';
import { ArtifactObjects } from '@kruntimes/artifacts-core';
import { ObjectStore } from '@kruntimes/testing';
import { RuntimeEnvironment } from './runtime-pods.ts';

const BUCKET = 'artifacts';
const STORE = 'results';

let env: RuntimeEnvironment;
let store: ObjectStore;
let pod: V1Pod;
let scratch: string;
let objects: ArtifactObjects;

beforeAll(async () => {
  store = await ObjectStore.start();
  await store.createBucket(BUCKET);
  env = await RuntimeEnvironment.start('runtimed-artifacts');
  scratch = await mkdtemp(join(tmpdir(), 'runtimed-artifacts-'));
  await env.core.createNamespacedSecret({
    namespace: env.name,
    body: { metadata: { name: 'results-s3' }, stringData: { ...store.credentials } },
  });
  const artifactStore: ArtifactStore = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'ArtifactStore',
    metadata: { name: STORE },
    spec: { endpoint: store.endpoint, bucket: BUCKET, prefix: 'e2e', credentialsSecretRef: { name: 'results-s3' } },
  };
  await env.objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: ARTIFACT_STORE_PLURAL,
    body: artifactStore,
  });
  objects = new ArtifactObjects(
    { endpoint: store.endpoint, bucket: BUCKET, prefix: 'e2e', region: 'us-east-1', forcePathStyle: true },
    store.credentials,
  );
  pod = await env.createRuntimePod('python-0', 'python');
}, 300_000);

afterAll(async () => {
  await env.stop();
  await store.stop();
  await rm(scratch, { recursive: true, force: true });
});

const REPORT = 'day,total\n2026-12-03,42\n';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function taskSpec(source: string, outputs: NonNullable<RunSpec['artifacts']>['outputs'], extra: Partial<RunSpec> = {}): RunSpec {
  return {
    runtime: 'rt',
    source: { inline: source },
    mode: { task: {} },
    artifacts: { store: STORE, outputs },
    env: [{ name: 'SCRATCH', value: scratch }],
    ...extra,
  };
}

const reportOutput = [{ id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' }];

async function runToEnd(name: string, spec: RunSpec): Promise<Run> {
  await env.createRun(name, spec);
  await env.bind(name, pod);
  return env.waitForRun(name, 'terminal', (r) =>
    ['Succeeded', 'Failed', 'Interrupted', 'Cancelled', 'Timeout'].includes(r.status?.phase ?? ''),
  );
}

/** Python that fetches a grant the way krt.artifacts.put does, then uploads `body` with the grant's headers to `url`. */
const rogueUpload = (grantFor: string, body: string, tamper: string) => `
import hashlib, json, os, urllib.request, urllib.error
import krt
declared = ${JSON.stringify(grantFor)}
grant = krt.artifacts.grant("report.csv", len(declared.encode()), hashlib.sha256(declared.encode()).hexdigest())
url, headers, body = grant["url"], dict(grant["headers"]), ${JSON.stringify(body)}.encode()
${tamper}
headers["Content-Length"] = str(len(body))
request = urllib.request.Request(url, data=body, method="PUT", headers=headers)
try:
    with urllib.request.urlopen(request) as response:
        result = {"status": response.status}
except urllib.error.HTTPError as error:
    result = {"status": error.code, "body": error.read().decode(errors="replace")[:300]}
open(os.path.join(os.environ["SCRATCH"], os.environ["KRT_RUN_NAME"] + ".json"), "w").write(json.dumps(result))
`;

async function uploadResult(name: string): Promise<{ status: number; body?: string }> {
  return JSON.parse(await readFile(join(scratch, `${name}.json`), 'utf8')) as { status: number; body?: string };
}

test('a task that puts its declared artifact succeeds with it in status (no URL), stored under its attempt, digest verified', async () => {
  const done = await runToEnd(
    'report',
    taskSpec(
      `import krt\nopen("report.csv", "w").write(${JSON.stringify(REPORT)})\nkrt.artifacts.put("report.csv", "report.csv")\n`,
      reportOutput,
    ),
  );
  expect(done.status).toMatchObject({
    phase: 'Succeeded',
    artifacts: [{ id: 'report.csv', digest: `sha256:${sha256(REPORT)}`, size: REPORT.length, mediaType: 'text/csv' }],
  });
  expect(JSON.stringify(done.status)).not.toMatch(/https?:\/\//);
  const key = artifactObjectKey('e2e', env.name, done.metadata.uid ?? '', 1, 'report.csv');
  expect(await objects.sha256(key, 1024)).toEqual({ sha256Hex: sha256(REPORT), size: REPORT.length });
});

test('exit 0 without a declared artifact is not Succeeded: runtimed fails the Run ArtifactMissing', async () => {
  const done = await runToEnd('nothing', taskSpec('print("forgot to upload")\n', reportOutput));
  expect(done.status).toMatchObject({ phase: 'Failed', reason: 'ArtifactMissing', exitCode: 0 });
  expect(done.status?.message).toContain('report.csv');
  expect(done.status?.artifacts).toBeUndefined();
});

test('a manifest naming an object that was never uploaded fails the Run ArtifactMissing (runtimed checks the store)', async () => {
  const done = await runToEnd(
    'phantom',
    taskSpec(`import krt\nkrt.artifacts.record("report.csv", 5, "${sha256('never')}")\n`, reportOutput),
  );
  expect(done.status).toMatchObject({ phase: 'Failed', reason: 'ArtifactMissing' });
  expect(done.status?.message).toContain('not in the store');
});

test('a grant for more than maxBytes is refused by runtimed (ArtifactTooLarge), and user code sees the code', async () => {
  const done = await runToEnd(
    'too-large',
    taskSpec(
      `import krt\ntry:\n    krt.artifacts.grant("report.csv", 4096, "${sha256('x')}")\nexcept krt.artifacts.ArtifactError as error:\n    print(error.code)\n    raise SystemExit(7)\n`,
      reportOutput,
    ),
  );
  expect(done.status).toMatchObject({ phase: 'Failed', exitCode: 7 });
  const lines = (await env.logs('python-0', 'runtimed')).filter((l) => l.runUID === done.metadata.uid && l.msg === 'task output');
  expect(lines.map((l) => l.line)).toContain('ArtifactTooLarge');
});

test('an upload of more bytes than granted is refused by the store (signed Content-Length)', async () => {
  await runToEnd('over-size', taskSpec(rogueUpload(REPORT, `${REPORT}extra`, ''), reportOutput));
  expect((await uploadResult('over-size')).status).toBe(403);
});

test('an upload to another key with a grant is refused by the store (the signature covers the key)', async () => {
  await runToEnd('outside-prefix', taskSpec(rogueUpload(REPORT, REPORT, 'url = url.replace("/report.csv?", "/other.csv?")'), reportOutput));
  expect((await uploadResult('outside-prefix')).status).toBe(403);
});

test('an upload with another digest than granted is refused, by the store or at the latest by runtimed before Succeeded', async () => {
  const done = await runToEnd(
    'wrong-digest',
    taskSpec(
      `${rogueUpload(REPORT, REPORT.replace('42', '43'), '')}\nimport krt\nkrt.artifacts.record("report.csv", ${String(REPORT.length)}, "${sha256(REPORT)}")\n`,
      reportOutput,
    ),
  );
  const upload = await uploadResult('wrong-digest');
  // Whichever layer catches it, the Run never succeeds with bytes other than the manifest's.
  if (upload.status === 200) {
    expect(done.status).toMatchObject({ phase: 'Failed', reason: 'ArtifactInvalid' });
  } else {
    expect(upload.status).toBeGreaterThanOrEqual(400);
    expect(done.status).toMatchObject({ phase: 'Failed', reason: 'ArtifactMissing' });
  }
});

test('a grant expires no later than the Pod Lease that holds the attempt', async () => {
  await runToEnd(
    'expiry',
    taskSpec(
      `import json, os, krt\ng = krt.artifacts.grant("report.csv", 3, "${sha256('abc')}")\nopen(os.path.join(os.environ["SCRATCH"], "expiry.json"), "w").write(json.dumps({"expiresAt": g["expiresAt"]}))\n`,
      [{ ...reportOutput[0]!, optional: true }],
    ),
  );
  const { expiresAt } = JSON.parse(await readFile(join(scratch, 'expiry.json'), 'utf8')) as { expiresAt: string };
  const lease = await env.admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: env.name, name: 'python-0' });
  // client-node types MicroTime as Date but hands over the wire's RFC 3339 string.
  const renewMs = Date.parse(String(lease.spec?.renewTime));
  const durationSeconds = lease.spec?.leaseDurationSeconds;
  if (Number.isNaN(renewMs) || durationSeconds === undefined) throw new Error('the Pod Lease has no renewTime or duration');
  expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now() - 60_000);
  // The renewal read here is the grant's or a later one: the bound is never tighter than the grant's own.
  expect(Date.parse(expiresAt)).toBeLessThanOrEqual(renewMs + durationSeconds * 1000);
});

test("an ended attempt's endpoint token is refused: no grant outlives its execution", async () => {
  await runToEnd(
    'keeps-token',
    taskSpec(
      `import json, os\nopen(os.path.join(os.environ["SCRATCH"], "token.json"), "w").write(json.dumps({"url": os.environ["KRT_ARTIFACTS_URL"], "token": os.environ["KRT_ARTIFACTS_TOKEN"]}))\n`,
      [{ ...reportOutput[0]!, optional: true }],
    ),
  );
  const saved = JSON.parse(await readFile(join(scratch, 'token.json'), 'utf8')) as { url: string; token: string };
  const response = await fetch(`${saved.url}/v1/grants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${saved.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ artifactId: 'report.csv', size: 3, sha256: sha256('abc') }),
  });
  expect(response.status).toBe(401);
});

test("the store's credentials appear nowhere in the user process's environment or in the files it can read", async () => {
  await runToEnd(
    'no-secrets',
    taskSpec(`import os\nopen(os.path.join(os.environ["SCRATCH"], "environ"), "wb").write(open("/proc/self/environ", "rb").read())\n`, [
      { ...reportOutput[0]!, optional: true },
    ]),
  );
  const environ = await readFile(join(scratch, 'environ'), 'utf8');
  expect(environ).toContain('KRT_ARTIFACTS_TOKEN=');
  for (const secret of Object.values(store.credentials)) expect(environ).not.toContain(secret);
  // Every file of the Runtime Pod's volumes and state on the node (workspaces, logs).
  const files = await listFiles(env.stateDir, 2_000);
  for (const file of files) {
    const text = await readFile(file, 'utf8').catch(() => '');
    expect({ file, leaked: text.includes(store.credentials.secretAccessKey) }).toEqual({ file, leaked: false });
  }
});

async function listFiles(root: string, limit: number): Promise<string[]> {
  const found: string[] = [];
  const pending = [root];
  while (pending.length > 0 && found.length < limit) {
    const dir = pending.pop() ?? '';
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) pending.push(path);
      else if (entry.isFile() && (await stat(path)).size < 16 * 1024 * 1024) found.push(path);
    }
  }
  return found;
}

test('the Bash command uploads too (krt-artifact put)', async () => {
  const bashPod = await env.createRuntimePod('bash-0', 'bash');
  await env.createRun('bash-report', {
    // printf turns the JSON string's \n into newlines (with '%s' they stayed a backslash and an n).
    ...taskSpec(`printf ${JSON.stringify(REPORT)} > report.csv\nkrt-artifact put report.csv report.csv\n`, reportOutput),
  });
  await env.bind('bash-report', bashPod);
  const done = await env.waitForRun('bash-report', 'terminal', (r) => ['Succeeded', 'Failed'].includes(r.status?.phase ?? ''));
  expect(done.status).toMatchObject({ phase: 'Succeeded', artifacts: [{ id: 'report.csv', digest: `sha256:${sha256(REPORT)}` }] });
});

import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { Log } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { apiServerPid, ensureBinaries, testCa, testClientCert, waitFor } from '@kruntimes/testing';
import { System } from '../src/index.ts';

// `kubectl logs` of a Runtime Pod through the real kube-apiserver, which dials the local
// node agent's kubelet endpoint at the Node's InternalIP (127.0.0.1) with its own client
// certificate; the agent answers like the kubelet.

const run = promisify(execFile);
const CONTAINER = 'runtimed';
const WAIT = { timeoutMs: 60_000, intervalMs: 200 };
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z /;

let system: System;
let kubectlPath: string;
let kubeconfigs: Record<string, string>;
let pod: V1Pod;
let podName: string;
let kubeletServingCa: string;

beforeAll(async () => {
  kubectlPath = join(await ensureBinaries(), 'kubectl');
  system = await System.start({ prefix: 'e2e-logs', gateway: false });
  await system.createRuntime('py', { language: 'python' });
  const pods = await system.waitRuntimeReady('py');
  pod = pods[0]!;
  podName = pod.metadata?.name ?? '';
  kubeconfigs = await system.cluster.writeKubeconfigs(join(system.dir, 'kubeconfigs'));
  kubeletServingCa = await readFile(join(system.cluster.info.dir, 'pki', 'kubelet-serving-ca.crt'), 'utf8');
  // alice may read Pods and their logs in the namespace, as `krt logs` will need; bob only the Pods.
  for (const [user, resources] of [
    ['alice', ['pods', 'pods/log']],
    ['bob', ['pods']],
  ] as const) {
    await system.rbac.createNamespacedRole({
      namespace: system.name,
      body: { metadata: { name: `reader-${user}` }, rules: [{ apiGroups: [''], resources: [...resources], verbs: ['get', 'list'] }] },
    });
    await system.rbac.createNamespacedRoleBinding({
      namespace: system.name,
      body: {
        metadata: { name: `reader-${user}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `reader-${user}` },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    });
  }
}, 180_000);

afterAll(async () => {
  await system.stop();
});

async function kubectl(args: string[], user = 'admin'): Promise<string> {
  const { stdout } = await run(kubectlPath, ['--kubeconfig', kubeconfigs[user] ?? '', '-n', system.name, ...args], {
    timeout: 30_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

/** kubectl's failure: its stderr. */
async function kubectlFails(args: string[], user = 'admin'): Promise<string> {
  try {
    await kubectl(args, user);
  } catch (error) {
    return String((error as { stderr?: unknown }).stderr);
  }
  throw new Error(`kubectl ${args.join(' ')} succeeded`);
}

/** What the agent wrote of the container so far (every start, plain). */
async function plainLog(): Promise<string> {
  return readFile(system.node.logFile(system.name, podName, CONTAINER), 'utf8');
}

test('kube-apiserver dials nodes at their InternalIP only, with a client certificate, verifying the node', async () => {
  const pid = await apiServerPid(system.cluster.info);
  expect(pid).toBeDefined();
  const argv = (await readFile(`/proc/${String(pid)}/cmdline`, 'utf8')).split('\0');
  const flags = argv.filter((arg) => arg.startsWith('--kubelet-'));
  expect(flags.map((flag) => flag.replace(/=\/.*$/, '=<file>'))).toEqual([
    '--kubelet-client-certificate=<file>',
    '--kubelet-client-key=<file>',
    '--kubelet-preferred-address-types=InternalIP',
    '--kubelet-certificate-authority=<file>',
  ]);
  const node = await system.core.readNode({ name: system.node.nodeName });
  const internal = node.status?.addresses?.filter((address) => address.type === 'InternalIP') ?? [];
  expect(internal.map((address) => address.address)).toEqual([expect.stringMatching(/^127\./) as unknown]);
  expect(node.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(system.node.kubeletPort);
  expect(pod.spec?.nodeName).toBe(system.node.nodeName);
});

test('kube-apiserver is given only loopback IP addresses to dial or listen on: no name to resolve, nothing off the machine', async () => {
  const pid = await apiServerPid(system.cluster.info);
  const argv = (await readFile(`/proc/${String(pid)}/cmdline`, 'utf8')).split('\0').filter((arg) => arg !== '');
  const value = (flag: string): string | undefined => argv.find((arg) => arg.startsWith(`${flag}=`))?.slice(flag.length + 1);
  const loopback = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
  const etcd = (value('--etcd-servers') ?? '').split(',').map((url) => new URL(url).hostname);
  expect({ etcd, bind: value('--bind-address'), advertise: value('--advertise-address') }).toEqual({
    etcd: [expect.stringMatching(loopback) as unknown],
    bind: expect.stringMatching(loopback) as unknown,
    advertise: expect.stringMatching(loopback) as unknown,
  });
  // Nothing it would call out to: no webhook (authentication, authorization, audit), OIDC issuer, egress proxy or external hostname.
  expect(argv.filter((arg) => /^--(?:.*webhook|oidc-|egress-selector|external-hostname)/.test(arg))).toEqual([]);
  expect(new URL(system.cluster.info.server).hostname).toMatch(loopback);
});

test('kubectl logs: the container output as written; --tail, --timestamps, --since', async () => {
  const all = await kubectl(['logs', podName, '-c', CONTAINER]);
  expect(all).toBe(await plainLog());
  const lines = all.trimEnd().split('\n');
  // runtimed logs two lines once it runs and is quiet until something happens.
  expect(lines.length).toBeGreaterThanOrEqual(2);
  expect(lines.some((line) => line.startsWith('{'))).toBe(true); // runtimed's pino lines

  expect(await kubectl(['logs', podName, '-c', CONTAINER, '--tail=1'])).toBe(`${lines.at(-1) ?? ''}\n`);
  expect(await kubectl(['logs', podName, '-c', CONTAINER, `--tail=${String(lines.length - 1)}`])).toBe(`${lines.slice(1).join('\n')}\n`);
  expect(await kubectl(['logs', podName, '-c', CONTAINER, '--tail=0'])).toBe('');

  const stamped = (await kubectl(['logs', podName, '-c', CONTAINER, '--timestamps'])).trimEnd().split('\n');
  expect(stamped).toHaveLength(lines.length);
  for (const [i, line] of stamped.entries()) {
    expect(line).toMatch(TIMESTAMP);
    expect(line.slice(31)).toBe(lines[i]);
  }

  // The first lines are from the start: once they are older than 3 s, --since=2s leaves them out.
  const firstAt = Date.parse(stamped[0]?.slice(0, 30) ?? '');
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, firstAt + 3_500 - Date.now())));
  const asked = Date.now();
  const recent = (await kubectl(['logs', podName, '-c', CONTAINER, '--since=2s', '--timestamps'])).split('\n').filter(Boolean);
  expect(recent).not.toContain(stamped[0]);
  for (const line of recent) expect(Date.parse(line.slice(0, 30))).toBeGreaterThanOrEqual(asked - 2_000 - 1_000);
  expect(await kubectl(['logs', podName, '-c', CONTAINER, '--since=1h'])).toContain(lines[0]);
  expect(await kubectl(['logs', podName, '-c', CONTAINER, '--limit-bytes=10'])).toBe(all.slice(0, 10));
});

test('@kubernetes/client-node Log: tail and timestamps, not following', async () => {
  const out = new PassThrough();
  const text = collect(out);
  await new Log(system.admin).log(system.name, podName, CONTAINER, out, { follow: false, tailLines: 1, timestamps: true });
  const lines = (await text).trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  const plain = (await plainLog()).trimEnd().split('\n');
  expect(lines.map((line) => line.replace(TIMESTAMP, ''))).toEqual(plain.slice(-1));
});

test('kubectl logs --previous before any restart: the kubelet error', async () => {
  expect(await kubectlFails(['logs', podName, '-c', CONTAINER, '--previous'])).toContain(
    `previous terminated container "${CONTAINER}" in pod "${podName}" not found`,
  );
});

test('a user with RBAC on pods/log reads the logs through the API server; one with pods only is refused there', async () => {
  expect(await kubectl(['logs', podName, '-c', CONTAINER, '--tail=1'], 'alice')).toBe(
    `${(await plainLog()).trimEnd().split('\n').at(-1) ?? ''}\n`,
  );
  expect(await kubectlFails(['logs', podName, '-c', CONTAINER], 'bob')).toContain(`User "bob" cannot get resource "pods/log"`);
});

test('the kubelet endpoint refuses anyone but kube-apiserver', async () => {
  const { info } = system.cluster;
  const port = system.node.kubeletPort ?? 0;
  const path = `/containerLogs/${system.name}/${podName}/${CONTAINER}`;
  // No client certificate, and one from a CA of its own: 401.
  expect(await nodeGet(port, path)).toMatchObject({ status: 401 });
  const otherCa = await testCa('not the cluster CA');
  expect(
    await nodeGet(
      port,
      path,
      await testClientCert(otherCa, { commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'] }),
    ),
  ).toMatchObject({ status: 401 });
  // Signed by the right CA but a user without rights on the node: 403.
  const clusterCa = { certPem: info.caPem, keyPem: await readFile(join(info.dir, 'pki', 'ca.key'), 'utf8') };
  expect(await nodeGet(port, path, await testClientCert(clusterCa, { commonName: 'bob' }))).toMatchObject({ status: 403 });
  // kube-apiserver's own client certificate: the log; unknown Pods and containers are 404.
  const apiserver = {
    certPem: await readFile(join(info.dir, 'pki', 'kubelet-client.crt'), 'utf8'),
    keyPem: await readFile(join(info.dir, 'pki', 'kubelet-client.key'), 'utf8'),
  };
  const ok = await nodeGet(port, `${path}?tailLines=1`, apiserver);
  expect(ok).toMatchObject({ status: 200, contentType: 'text/plain', chunked: true });
  expect(await nodeGet(port, `/containerLogs/${system.name}/no-such-pod/${CONTAINER}`, apiserver)).toMatchObject({
    status: 404,
    body: 'pod "no-such-pod" does not exist\n',
  });
  expect(await nodeGet(port, `/containerLogs/${system.name}/${podName}/nope`, apiserver)).toMatchObject({
    status: 404,
    body: `container "nope" not found in pod "${podName}"\n`,
  });
});

test('kubectl logs -f shows what is written after it started and ends when the container exits; --previous then reads it', async () => {
  const child = spawn(kubectlPath, ['--kubeconfig', kubeconfigs.admin ?? '', '-n', system.name, 'logs', '-f', podName, '-c', CONTAINER], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // 'close': exited and its output read to the end.
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  // The client-node Log class follows the same start alongside.
  const followed = new PassThrough();
  const followedText = collect(followed);
  await new Log(system.admin).log(system.name, podName, CONTAINER, followed, { follow: true });
  try {
    const before = await plainLog();
    await waitFor(
      'kubectl logs -f to print what there was',
      () => Promise.resolve(output.length >= before.length ? true : undefined),
      WAIT,
    );
    expect(output).not.toContain('shutting down');
    // SIGTERM: runtimed logs that it shuts down, then exits; restartPolicy Always starts it again.
    system.node.crashContainer(system.name, podName, CONTAINER, 'SIGTERM');
    const code = await Promise.race([
      exited,
      new Promise<'still following'>((resolve) =>
        setTimeout(() => {
          resolve('still following');
        }, 30_000),
      ),
    ]);
    expect(code).toBe(0);
    expect(output).toContain('shutting down');
    expect(output.startsWith(before)).toBe(true);
    expect(await followedText).toBe(output);
  } finally {
    child.kill();
  }

  // The restarted container has a log of its own; --previous is the one that ended.
  await waitFor(
    'runtimed restarted',
    async () => {
      const current = await system.core.readNamespacedPod({ namespace: system.name, name: podName });
      const status = current.status?.containerStatuses?.find((s) => s.name === CONTAINER);
      return (status?.restartCount ?? 0) >= 1 && status?.state?.running !== undefined ? true : undefined;
    },
    WAIT,
  );
  expect(await kubectl(['logs', podName, '-c', CONTAINER, '--previous'])).toBe(output);
  const current = await kubectl(['logs', podName, '-c', CONTAINER]);
  expect(current).not.toContain('shutting down');
  expect((await plainLog()).endsWith(current)).toBe(true);
}, 120_000);

function collect(stream: PassThrough): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
    stream.once('end', () => {
      resolve(text);
    });
    stream.once('error', reject);
  });
}

interface NodeAnswer {
  status: number;
  contentType: string;
  chunked: boolean;
  body: string;
}

/** A GET to the node's kubelet endpoint, optionally with a client certificate (bounded: 10 s). */
function nodeGet(port: number, path: string, client?: { certPem: string; keyPem: string }): Promise<NodeAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'GET',
        // Verified as kube-apiserver verifies it: for the InternalIP, from the kubelet serving CA.
        ca: kubeletServingCa,
        ...(client === undefined ? {} : { cert: client.certPem, key: client.keyPem }),
        timeout: 10_000,
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            contentType: res.headers['content-type'] ?? '',
            chunked: res.headers['transfer-encoding'] === 'chunked',
            body,
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

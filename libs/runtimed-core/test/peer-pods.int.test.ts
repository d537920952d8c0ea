import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { LABELS } from '@kruntimes/api';
import { Cluster, waitFor } from '@kruntimes/testing';
import { PeerPods } from '../src/peer-pods.ts';

const cluster = Cluster.fromEnvironment();
const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
const logger = { error: () => undefined, debug: () => undefined };
const WAIT = { timeoutMs: 30_000, intervalMs: 100 };

async function createPod(namespace: string, name: string, runtime: string): Promise<string> {
  const pod = await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels: { [LABELS.runtime]: runtime } },
      spec: { containers: [{ name: 'runtimed', image: 'kruntimes/runtimed' }] },
    },
  });
  return pod.metadata?.uid ?? '';
}

/** Plays the kubelet's status report for a Pod (no node runs it in this test). */
async function reportReady(namespace: string, name: string, ip: string): Promise<void> {
  await core.patchNamespacedPodStatus(
    { namespace, name, body: { status: { podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: 'True' }] } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

test("the Pod cache follows the Runtime's Pods by UID: address, readiness, deletion, a same-named successor", async () => {
  const namespace = await cluster.createNamespace({ prefix: 'peer-pods', waitForDefaultServiceAccount: true });
  const peers = new PeerPods(cluster.kubeConfig(), namespace.name, 'python', logger);
  await peers.start();
  try {
    const first = await createPod(namespace.name, 'python-0', 'python');
    const other = await createPod(namespace.name, 'bash-0', 'bash');
    await waitFor('the Pod in the cache', () => Promise.resolve(peers.byUID(first)), WAIT);
    expect(peers.byUID(first)).toEqual({ name: 'python-0', uid: first, ip: '', ready: false, deleting: false });
    expect(peers.byUID(other)).toBeUndefined();

    await reportReady(namespace.name, 'python-0', '127.0.0.42');
    await waitFor('the reported address', () => Promise.resolve(peers.byUID(first)?.ready === true ? true : undefined), WAIT);
    expect(peers.byUID(first)).toMatchObject({ ip: '127.0.0.42', ready: true });

    await core.deleteNamespacedPod({ namespace: namespace.name, name: 'python-0', body: { gracePeriodSeconds: 0 } });
    await waitFor('the deleted Pod to leave the cache', () => Promise.resolve(peers.byUID(first) === undefined ? true : undefined), WAIT);
    const successor = await createPod(namespace.name, 'python-0', 'python');
    await waitFor('the successor in the cache', () => Promise.resolve(peers.byUID(successor)), WAIT);
    expect(peers.byUID(first)).toBeUndefined();
  } finally {
    await peers.stop();
    await namespace.delete();
  }
});

// The artifacts part of `dev up`: a real S3-compatible store (SeaweedFS) on loopback, an
// ArtifactStore for the demo namespace, and a task Run that uploads a report to it.
import { CoreV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '@kruntimes/api';
import type { ArtifactStore, Run } from '@kruntimes/api';
import { kruntimesClients } from '@kruntimes/run-client';
import { ObjectStore } from '@kruntimes/testing';
import type { Say } from './dev-components.ts';
import { DEMO_NAMESPACE, createIfMissing, waitDemoRun } from './dev-demo.ts';

export const DEMO_BUCKET = 'artifacts';
export const DEMO_ARTIFACT_STORE = 'demo-artifacts';
const DEMO_STORE_SECRET = 'demo-artifacts-s3';
export const DEMO_ARTIFACT_RUN = 'report-py';

export const DEMO_ARTIFACT_TASK = `import krt
rows = [("day", "total"), ("2026-12-03", 42)]
with open("report.csv", "w") as f:
    f.writelines(f"{day},{total}\\n" for day, total in rows)
entry = krt.artifacts.put("report.csv", "report.csv")
print("uploaded", entry["artifactId"], entry["size"], "bytes")
`;

/** SeaweedFS (`<binDir>/weed`) under `<dir>/object-store`, with the demo bucket. */
export async function startObjectStore(dir: string, binDir: string, say: Say): Promise<ObjectStore> {
  // binDir given: without it ObjectStore.start would ensure (build) every binary first.
  const store = await ObjectStore.start({ tmpRoot: dir, binDir, log: say });
  await store.createBucket(DEMO_BUCKET);
  say(`object store (SeaweedFS S3) at ${store.endpoint}, bucket ${DEMO_BUCKET}, started in ${String(store.startupMs)} ms`);
  return store;
}

/** The demo namespace's ArtifactStore and its credentials Secret, and the task Run that writes an artifact. */
export async function createArtifactDemo(admin: KubeConfig, store: ObjectStore): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const { artifactStores, runs } = kruntimesClients(admin);
  await createIfMissing(() =>
    core.createNamespacedSecret({
      namespace: DEMO_NAMESPACE,
      body: { metadata: { name: DEMO_STORE_SECRET }, stringData: { ...store.credentials } },
    }),
  );
  const artifactStore: ArtifactStore = {
    apiVersion: `${API_GROUP}/${API_VERSION}` as ArtifactStore['apiVersion'],
    kind: 'ArtifactStore',
    metadata: { name: DEMO_ARTIFACT_STORE },
    spec: { endpoint: store.endpoint, bucket: DEMO_BUCKET, prefix: 'dev', credentialsSecretRef: { name: DEMO_STORE_SECRET } },
  };
  await artifactStores.create(DEMO_NAMESPACE, artifactStore); // AlreadyExists: kept as an earlier run of this directory left it
  const run: Run = {
    apiVersion: `${API_GROUP}/${API_VERSION}` as Run['apiVersion'],
    kind: 'Run',
    metadata: { name: DEMO_ARTIFACT_RUN },
    spec: {
      runtime: 'python',
      source: { inline: DEMO_ARTIFACT_TASK },
      mode: { task: {} },
      artifacts: { store: DEMO_ARTIFACT_STORE, outputs: [{ id: 'report.csv', maxBytes: 1024 * 1024, mediaType: 'text/csv' }] },
    },
  };
  await runs.create(DEMO_NAMESPACE, run); // AlreadyExists: kept as an earlier run of this directory left it
}

/** Waits for the artifact task to finish; one line saying what it stored, or an error when it did not succeed. */
export async function artifactDemoResult(admin: KubeConfig, signal: AbortSignal, check: () => void): Promise<string> {
  const run = await waitDemoRun(admin, DEMO_ARTIFACT_RUN, signal, check, 'finished');
  if (run.status?.phase !== 'Succeeded') {
    throw new Error(
      `Run ${DEMO_ARTIFACT_RUN} ended ${run.status?.phase ?? ''} (${run.status?.reason ?? ''}: ${run.status?.message ?? ''})`,
    );
  }
  const stored = (run.status.artifacts ?? []).map((a) => `${a.id} (${a.mediaType}, ${String(a.size)} bytes, ${a.digest.slice(0, 19)}…)`);
  return `  ${DEMO_ARTIFACT_RUN} (python task) -> Succeeded with verified artifacts: ${stored.join(', ')}`;
}

// jest globalSetup: one control plane per jest run, shared by every test file of the run.
// Test files reach it through Cluster.fromEnvironment(); each test makes its own namespace.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../binaries.ts';
import { CLUSTER_INFO_ENV } from '../cluster.ts';
import { ControlPlane } from '../control-plane.ts';
import { waitForRunCreatorPolicy } from '../manifests.ts';
import { setRunningControlPlane } from './state.ts';

/** Whatever the CRD generator writes is what the tests run against. */
const CRD_DIRECTORY = join(REPO_ROOT, 'deploy/charts/kruntimes/crds');
/** And the admission policies the chart installs (generated from libs/crds too). */
const ADMISSION_POLICIES = join(REPO_ROOT, 'deploy/charts/kruntimes/admission/policies.yaml');

export default async function globalSetup(): Promise<void> {
  const log = (line: string): void => {
    process.stderr.write(`[control-plane] ${line}\n`);
  };
  const started = performance.now();
  const controlPlane = await ControlPlane.start({ crdDirectories: [CRD_DIRECTORY], manifestFiles: [ADMISSION_POLICIES], log });
  setRunningControlPlane(controlPlane);
  await waitForRunCreatorPolicy(controlPlane.cluster.kubeConfig(), { timeoutMs: 60_000 });
  const infoFile = join(controlPlane.info.dir, 'cluster.json');
  await writeFile(infoFile, JSON.stringify(controlPlane.info), { mode: 0o600 });
  // Workers are forked after global setup and inherit the environment.
  process.env[CLUSTER_INFO_ENV] = infoFile;
  log(`up in ${Math.round(performance.now() - started)} ms (binaries included); state in ${controlPlane.info.dir}`);
}

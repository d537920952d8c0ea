import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCertificateAuthority } from '@kruntimes/workload-pki';
import { controllerManagerConfig } from './config.ts';
import type { ControllerManagerFlags } from './config.ts';

let caDir: string;

beforeAll(async () => {
  caDir = await mkdtemp(join(tmpdir(), 'cm-config-'));
  const ca = await createCertificateAuthority();
  await Promise.all([writeFile(join(caDir, 'ca.crt'), ca.certPem), writeFile(join(caDir, 'ca.key'), ca.keyPem)]);
});

afterAll(async () => {
  await rm(caDir, { recursive: true, force: true });
});

function config(flags: ControllerManagerFlags, env: NodeJS.ProcessEnv = {}) {
  return controllerManagerConfig({ 'internal-ca-dir': caDir, ...flags }, env);
}

describe('controllerManagerConfig', () => {
  it('has the defaults of the flags, the Lease in POD_NAMESPACE, and runtimed resources only when asked for', async () => {
    const checked = await config({}, { POD_NAMESPACE: 'platform' });
    expect(checked.leaderElection).toEqual({
      namespace: 'platform',
      leaseName: 'kruntimes-controller-manager',
      leaseDurationSeconds: 15,
      renewDeadlineSeconds: 10,
      retryPeriodSeconds: 2,
    });
    expect(checked.workload).toEqual({
      runtimedImage: 'kruntimes/runtimed:latest',
      runtimeServerImages: { python: 'kruntimes/runtime-server-python:latest', bash: 'kruntimes/runtime-server-bash:latest' },
      serviceAccountName: 'kruntimes-runtimed',
      runtimeServerListen: 'loopback',
      runIsolation: 'perRunUser',
      automaticRetry: true,
    });
    expect((await config({ 'user-namespaces': 'false' })).workload.runIsolation).toBe('sharedUser');
    expect(checked.finishedRunsPerRuntime).toBe(100);
    expect((await config({ 'runtimed-memory-limit': '96Mi', 'runtimed-cpu-request': '50m' })).workload.runtimedResources).toEqual({
      requests: { cpu: '50m' },
      limits: { memory: '96Mi' },
    });
    expect((await config({}, { KRT_AUTOMATIC_RETRY: 'false' })).workload.automaticRetry).toBe(false);
  });

  it.each([
    [{ 'runtimed-memory-limit': 'lots' }, '--runtimed-memory-limit must be a quantity such as 96Mi, not "lots"'],
    [{ 'gateway-ca-file': '/nowhere' }, '--gateway-ca-file needs --gateway-host'],
    [{ 'runtime-otlp-endpoint': 'collector:4318' }, '--runtime-otlp-endpoint must be an http:// or https:// URL'],
    [{ 'automatic-retry': 'maybe' }, '--automatic-retry must be true or false, not "maybe"'],
    [{ 'user-namespaces': 'yes' }, '--user-namespaces must be true or false, not "yes"'],
    [{ 'runtime-server-listen': 'any' }, '--runtime-server-listen must be loopback or podIP, not "any"'],
    [{ 'lease-duration-seconds': '0.5' }, '--lease-duration-seconds must be a number >= 1, not "0.5"'],
    [{ 'finished-runs-per-runtime': '-1' }, '--finished-runs-per-runtime must be a number >= 0, not "-1"'],
  ])('refuses %j', async (args, message) => {
    await expect(config(args)).rejects.toThrow(message);
  });

  it('needs --internal-ca-dir', async () => {
    await expect(controllerManagerConfig({}, {})).rejects.toThrow('--internal-ca-dir is required');
  });
});

// The real runtime-gateway (`node apps/runtime-gateway/src/main.ts`) as a child process in its own process group.
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { appendFile, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GATEWAY_RBAC_RULES } from '@kruntimes/gateway-core';
import { groupAlive, signalGroup } from '@kruntimes/host';
import { call, freePorts, kubeconfigYaml, testCa, testServerCert, waitFor } from '@kruntimes/testing';
import type { Cluster, TestCert } from '@kruntimes/testing';
import type { NamespaceAccess } from '@kruntimes/testing';
import { appEntrypoint, childNodeOptions } from './runtime-pods.ts';

export interface GatewayProcess {
  pid: number;
  /** https://127.0.0.1:<port> */
  url: string;
  /** The CA that issued the gateway's serving certificate (what clients trust). */
  caPem: string;
  metricsUrl: string;
  port: number;
  metricsPort: number;
  logFile: string;
  certFile: string;
  keyFile: string;
  exited: Promise<number | null>;
}

export interface GatewayOptions {
  cluster: Cluster;
  namespace: string;
  access: NamespaceAccess;
  /** Its files (certificates, kubeconfig, `gateway.log`) go here. */
  dir: string;
  /** The CA of runtimed's serving certificates (the system's internal CA). */
  internalCaPem: string;
  /** Tracing on: its OTEL_EXPORTER_OTLP_ENDPOINT. */
  otlpEndpoint?: string;
  /** Its NODE_OPTIONS, e.g. the heap flags the chart gives it. */
  nodeOptions?: string;
  /** Node flags before the entrypoint, for those NODE_OPTIONS does not take (e.g. the chart's `--no-maglev`). */
  nodeFlags?: readonly string[];
  /** Its --shutdown-delay-seconds; default 1, short: every stop and restart waits for it. */
  shutdownDelaySeconds?: number;
}

interface GatewayFiles {
  cert: string;
  key: string;
  internalCa: string;
  kubeconfig: string;
  log: string;
}

/** How each gateway was started (to start it again the same way) and the CA of its serving certificate (to issue its next one). */
const launches = new WeakMap<GatewayProcess, { args: string[]; ca: TestCert; env: Record<string, string> }>();
const STOP_GRACE_MS = 8_000;
const ANSWER_TIMEOUT_MS = 30_000;

function servingCertificate(ca: TestCert): Promise<TestCert> {
  return testServerCert(ca, { dns: ['localhost'], ips: ['127.0.0.1'] });
}

/** A serving certificate for 127.0.0.1/localhost from a new test CA, runtimed's CA, and a kubeconfig of its own ServiceAccount. */
async function writeGatewayFiles(options: GatewayOptions, ca: TestCert): Promise<GatewayFiles> {
  const { cluster, namespace, dir } = options;
  await mkdir(dir, { recursive: true });
  const files: GatewayFiles = {
    cert: join(dir, 'tls.crt'),
    key: join(dir, 'tls.key'),
    internalCa: join(dir, 'runtimed-ca.crt'),
    kubeconfig: join(dir, 'gateway.kubeconfig'),
    log: join(dir, 'gateway.log'),
  };
  const serving = await servingCertificate(ca);
  await writeFile(files.cert, serving.certPem);
  await writeFile(files.key, serving.keyPem, { mode: 0o600 });
  await writeFile(files.internalCa, options.internalCaPem);
  const token = await options.access.serviceAccountToken('runtime-gateway', GATEWAY_RBAC_RULES);
  const { server, caPem } = cluster.info;
  await writeFile(files.kubeconfig, kubeconfigYaml({ server, caPem, user: `${namespace}-runtime-gateway`, token }), { mode: 0o600 });
  return files;
}

function gatewayArguments(
  files: GatewayFiles,
  namespace: string,
  port: number,
  metricsPort: number,
  nodeFlags: readonly string[],
  shutdownDelaySeconds: number,
): string[] {
  return [
    ...childNodeOptions(),
    ...nodeFlags,
    appEntrypoint('apps/runtime-gateway'),
    ...['--listen', `127.0.0.1:${port}`, '--tls-cert-file', files.cert, '--tls-key-file', files.key],
    ...['--runtimed-ca-file', files.internalCa, '--resolve', 'endpoints', '--namespace', namespace, '--kubeconfig', files.kubeconfig],
    ...['--metrics-address', `127.0.0.1:${metricsPort}`, '--drain-seconds', '15', '--log-level', 'debug'],
    ...['--shutdown-delay-seconds', String(shutdownDelaySeconds)],
  ];
}

/** Output to the log file; only PATH and HOME of this process's environment, plus `extraEnv`. */
function spawnGateway(args: string[], logFile: string, extraEnv: Record<string, string>): { pid: number; exited: Promise<number | null> } {
  const log = openSync(logFile, 'a');
  let child;
  try {
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...extraEnv };
    child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', log, log], env });
  } finally {
    closeSync(log);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error('cannot start the runtime-gateway');
  child.on('error', () => undefined);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      resolve(code);
    });
  });
  child.unref();
  return { pid, exited };
}

/** Resolves once the gateway answers HTTPS (404 on an unknown path); fails at once when it exits first. */
async function waitAnswering(gateway: GatewayProcess): Promise<void> {
  let exitCode: number | null | undefined;
  void gateway.exited.then((code) => {
    exitCode = code;
  });
  await waitFor(
    'the runtime-gateway answering HTTPS',
    async () => {
      if (exitCode !== undefined)
        throw new Error(`the runtime-gateway exited (${String(exitCode)}):\n${await readFile(gateway.logFile, 'utf8')}`);
      try {
        const answer = await call(`${gateway.url}/healthz-probe`, { ca: gateway.caPem, method: 'GET' });
        return answer.status === 404 ? true : undefined;
      } catch {
        return undefined;
      }
    },
    { timeoutMs: ANSWER_TIMEOUT_MS, intervalMs: 100 },
  );
}

/**
 * Free ports are chosen before the gateway binds them, and another process (a parallel suite,
 * a Pod) can take one in between: only that failure (EADDRINUSE in its log) starts it again,
 * on other ports, as the control plane's start does.
 */
const START_ATTEMPTS = 3;

/** The gateway with `--resolve endpoints`, HTTPS only; resolves once it answers. */
export async function startGateway(options: GatewayOptions): Promise<GatewayProcess> {
  const ca = await testCa(`gateway-ca-${options.namespace}`);
  const files = await writeGatewayFiles(options, ca);
  const env: Record<string, string> = {
    ...(options.otlpEndpoint === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: options.otlpEndpoint }),
    ...(options.nodeOptions === undefined ? {} : { NODE_OPTIONS: options.nodeOptions }),
  };
  for (let attempt = 1; ; attempt++) {
    const [port = 0, metricsPort = 0] = await freePorts(2);
    const args = gatewayArguments(files, options.namespace, port, metricsPort, options.nodeFlags ?? [], options.shutdownDelaySeconds ?? 1);
    // This attempt's lines start here: an earlier attempt's EADDRINUSE must not decide for this one.
    const logStart = await stat(files.log).then(
      (log) => log.size,
      (error: unknown) => {
        // No log yet (the first start creates it): this attempt's lines start at 0.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
        throw error;
      },
    );
    const { pid, exited } = spawnGateway(args, files.log, env);
    const gateway: GatewayProcess = {
      pid,
      url: `https://127.0.0.1:${String(port)}`,
      caPem: ca.certPem,
      metricsUrl: `http://127.0.0.1:${String(metricsPort)}/metrics`,
      port,
      metricsPort,
      logFile: files.log,
      certFile: files.cert,
      keyFile: files.key,
      exited,
    };
    try {
      return await answering(gateway, { args, ca, env });
    } catch (error) {
      const portTaken = (await readFile(files.log)).subarray(logStart).includes('EADDRINUSE');
      if (!portTaken || attempt >= START_ATTEMPTS) throw error;
      // The log keeps the failed start's lines; the next start appends its own.
      await appendFile(
        files.log,
        `--- a port was taken before the gateway could bind it; starting again (attempt ${String(attempt + 1)})\n`,
      );
    }
  }
}

/** The gateway, remembered with how it was started, once it answers; stopped when it does not. */
async function answering(
  gateway: GatewayProcess,
  launch: { args: string[]; ca: TestCert; env: Record<string, string> },
): Promise<GatewayProcess> {
  launches.set(gateway, launch);
  try {
    await waitAnswering(gateway);
  } catch (error) {
    await stopGateway(gateway);
    throw error;
  }
  return gateway;
}

/**
 * The gateway stopped (drained) and started again with the same flags, port, certificate
 * and CA (a restart fault); resolves with the new process once it answers.
 */
export async function restartGateway(gateway: GatewayProcess): Promise<GatewayProcess> {
  const launch = launches.get(gateway);
  if (launch === undefined) throw new Error('a gateway this module did not start');
  await stopGateway(gateway);
  const { pid, exited } = spawnGateway(launch.args, gateway.logFile, launch.env);
  return answering({ ...gateway, pid, exited }, launch);
}

/** SIGTERM to the process group, SIGKILL after a bound; resolves once it exited. */
export async function stopGateway({ pid, exited }: GatewayProcess): Promise<void> {
  if (!groupAlive(pid)) return;
  signalGroup(pid, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const killed = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => {
        resolve(true);
      }, STOP_GRACE_MS);
    }),
  ]);
  clearTimeout(timer);
  if (killed) {
    signalGroup(pid, 'SIGKILL');
    await exited;
  }
}

/**
 * Replaces the gateway's serving certificate files (same CA, same names) and returns the
 * new certificate's SHA-256 fingerprint; the gateway picks it up within its reload interval.
 */
export async function rotateServingCertificate(gateway: GatewayProcess): Promise<string> {
  const ca = launches.get(gateway)?.ca;
  if (ca === undefined) throw new Error('a gateway this module did not start');
  const next = await servingCertificate(ca);
  // Key first: until the cert follows, the pair does not match and the gateway keeps the old one.
  await writeFile(gateway.keyFile, next.keyPem, { mode: 0o600 });
  await writeFile(gateway.certFile, next.certPem);
  return new X509Certificate(next.certPem).fingerprint256;
}

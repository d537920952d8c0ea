import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { Client, credentials } from '@grpc/grpc-js';
import type { V1Container, V1Probe } from '@kubernetes/client-node';
import { errorMessage } from './errors.ts';
import { assertLoopback } from './loopback.ts';

export type ProbeResult = { ok: true } | { ok: false; message: string };

export interface ProbeContext {
  podIP: string;
  container: V1Container;
  env: Record<string, string>;
  cwd: string;
  /** A container in a user namespace: exec probes run as it does (the prefix, given the namespace's descriptor). */
  userNamespace?: { prefix: readonly string[]; fd: number };
}

/** Kubelet defaults for a probe's timing fields. */
export function probeTiming(probe: V1Probe): {
  initialDelayMs: number;
  periodMs: number;
  timeoutMs: number;
  successThreshold: number;
  failureThreshold: number;
} {
  return {
    initialDelayMs: (probe.initialDelaySeconds ?? 0) * 1000,
    periodMs: (probe.periodSeconds ?? 10) * 1000,
    timeoutMs: (probe.timeoutSeconds ?? 1) * 1000,
    successThreshold: probe.successThreshold ?? 1,
    failureThreshold: probe.failureThreshold ?? 3,
  };
}

/** Runs one probe attempt. Never throws: every failure is a failed probe with a reason. */
export async function runProbe(probe: V1Probe, context: ProbeContext): Promise<ProbeResult> {
  const { timeoutMs } = probeTiming(probe);
  try {
    if (probe.httpGet !== undefined) {
      const host = probe.httpGet.host ?? context.podIP;
      const port = resolvePort(probe.httpGet.port, context.container);
      const scheme = probe.httpGet.scheme ?? 'HTTP';
      const headers: Record<string, string> = { 'User-Agent': 'kube-probe/local-node', Accept: '*/*' };
      for (const header of probe.httpGet.httpHeaders ?? []) headers[header.name] = header.value;
      return await httpProbe({ scheme, host, port, path: probe.httpGet.path ?? '/', headers, timeoutMs });
    }
    if (probe.tcpSocket !== undefined) {
      return await tcpProbe(probe.tcpSocket.host ?? context.podIP, resolvePort(probe.tcpSocket.port, context.container), timeoutMs);
    }
    if (probe.grpc !== undefined) {
      return await grpcProbe(context.podIP, probe.grpc.port, probe.grpc.service ?? '', timeoutMs);
    }
    if (probe.exec !== undefined) {
      return await execProbe(probe.exec.command ?? [], context, timeoutMs);
    }
    return { ok: false, message: 'probe has no handler (httpGet, tcpSocket, grpc or exec)' };
  } catch (error) {
    return { ok: false, message: errorMessage(error) };
  }
}

/** A named port is looked up in the container's ports, as the kubelet does. */
export function resolvePort(port: number | string, container: V1Container): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number.parseInt(port, 10);
  const named = container.ports?.find((p) => p.name === port);
  if (named === undefined) throw new Error(`container ${container.name} has no port named ${port}`);
  return named.containerPort;
}

function httpProbe(target: {
  scheme: string;
  host: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  timeoutMs: number;
}): Promise<ProbeResult> {
  assertLoopback(target.host, 'httpGet probe');
  return new Promise((resolve) => {
    const options = {
      host: target.host,
      port: target.port,
      path: target.path,
      method: 'GET',
      headers: target.headers,
      timeout: target.timeoutMs,
    };
    const callback = (response: IncomingMessage): void => {
      const status = response.statusCode ?? 0;
      response.resume();
      // The kubelet counts 2xx and 3xx as success and does not follow redirects off-host.
      resolve(status >= 200 && status < 400 ? { ok: true } : { ok: false, message: `HTTP probe failed with statuscode: ${status}` });
    };
    // Like the kubelet, an HTTPS probe does not verify the certificate.
    const req =
      target.scheme === 'HTTPS' ? httpsRequest({ ...options, rejectUnauthorized: false }, callback) : httpRequest(options, callback);
    req.on('timeout', () => {
      req.destroy(new Error(`timeout after ${target.timeoutMs} ms`));
    });
    req.on('error', (error) => {
      resolve({
        ok: false,
        message: `Get "${target.scheme.toLowerCase()}://${target.host}:${target.port}${target.path}": ${error.message}`,
      });
    });
    req.end();
  });
}

function tcpProbe(host: string, port: number, timeoutMs: number): Promise<ProbeResult> {
  assertLoopback(host, 'tcpSocket probe');
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve({ ok: true });
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve({ ok: false, message: `dial tcp ${host}:${port}: i/o timeout` });
    });
    socket.once('error', (error) => {
      resolve({ ok: false, message: `dial tcp ${host}:${port}: ${error.message}` });
    });
  });
}

/** grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING */
const SERVING = 1;

function grpcProbe(host: string, port: number, service: string, timeoutMs: number): Promise<ProbeResult> {
  assertLoopback(host, 'grpc probe');
  const client = new Client(`${host}:${port}`, credentials.createInsecure());
  return new Promise<ProbeResult>((resolve) => {
    client.makeUnaryRequest<Buffer, Buffer>(
      '/grpc.health.v1.Health/Check',
      (message) => message,
      (bytes) => bytes,
      encodeHealthCheckRequest(service),
      { deadline: Date.now() + timeoutMs },
      (error, response) => {
        if (error !== null) {
          resolve({ ok: false, message: `grpc health check failed: ${error.message}` });
          return;
        }
        const status = decodeServingStatus(response ?? Buffer.alloc(0));
        resolve(status === SERVING ? { ok: true } : { ok: false, message: `service unhealthy (responded with status ${status})` });
      },
    );
  }).finally(() => {
    client.close();
  });
}

/** HealthCheckRequest{service = 1}: a single length-delimited field, omitted when empty. */
export function encodeHealthCheckRequest(service: string): Buffer {
  if (service === '') return Buffer.alloc(0);
  const bytes = Buffer.from(service, 'utf8');
  return Buffer.concat([Buffer.from([0x0a]), encodeVarint(bytes.length), bytes]);
}

/** HealthCheckResponse{status = 1 (enum)}; an absent field is UNKNOWN (0). Other fields are skipped. */
export function decodeServingStatus(bytes: Buffer): number {
  let offset = 0;
  let status = 0;
  while (offset < bytes.length) {
    const [tag, afterTag] = readVarint(bytes, offset);
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (wireType === 0) {
      const [value, next] = readVarint(bytes, afterTag);
      if (field === 1) status = value;
      offset = next;
    } else if (wireType === 2) {
      const [length, next] = readVarint(bytes, afterTag);
      offset = next + length;
    } else {
      throw new Error(`unexpected wire type ${wireType} in HealthCheckResponse`);
    }
  }
  return status;
}

function encodeVarint(value: number): Buffer {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Buffer.from(out);
}

function readVarint(bytes: Buffer, start: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (let offset = start; offset < bytes.length && shift < 35; offset++) {
    const byte = bytes.readUInt8(offset);
    value |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value >>> 0, offset + 1];
    shift += 7;
  }
  throw new Error('truncated varint in HealthCheckResponse');
}

function execProbe(command: readonly string[], context: ProbeContext, timeoutMs: number): Promise<ProbeResult> {
  if (command.length === 0) return Promise.resolve({ ok: false, message: 'exec probe has an empty command' });
  const ns = context.userNamespace;
  const [file = '', ...args] = ns === undefined ? command : [...ns.prefix, ...command];
  return new Promise((resolve) => {
    const child = spawn(file, args, {
      cwd: context.cwd,
      env: context.env,
      stdio: ns === undefined ? 'ignore' : ['ignore', 'ignore', 'ignore', ns.fd],
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    child.once('error', (error) => {
      resolve({ ok: false, message: `exec probe: ${error.message}` });
    });
    child.once('exit', (code, signal) => {
      if (code === 0) resolve({ ok: true });
      else
        resolve({
          ok: false,
          message: signal === null ? `command exited with ${String(code)}` : `command killed by ${signal} (timeout ${timeoutMs} ms)`,
        });
    });
  });
}

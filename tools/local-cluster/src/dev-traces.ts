// `dev up`'s Jaeger (all-in-one, in memory, every port on loopback): the gateway, the
// Runtime Pods' runtimed and Runtime Servers export their spans to it; after the demo, the
// newest trace of an invocation is read back and summarised.
import { LOOPBACK, freePorts, jaegerLaunch, portFree } from '@kruntimes/testing';
import type { JaegerLaunch } from '@kruntimes/testing';
import { join } from 'node:path';
import { DevError, waitUntil } from './dev-components.ts';
import type { Running, Say } from './dev-components.ts';
import { exitError, startOnFreshPorts } from './dev-ports.ts';

const START_TIMEOUT_MS = 60_000;
/** The Runtime Pods export in batches (OTEL_BSP_SCHEDULE_DELAY, 5 s by default). */
const TRACE_TIMEOUT_MS = 30_000;
/** The services whose spans one invocation crosses. */
export const INVOKE_PATH_SERVICES = ['kruntimes-runtime-gateway', 'kruntimes-runtimed'] as const;

export interface DevJaeger {
  otlpEndpoint: string;
  queryUrl: string;
  process: Running;
}

/** The one port known before Jaeger starts: the services and Pods export to it from their start. */
export interface JaegerPlan {
  otlpHttpPort: number;
  otlpEndpoint: string;
}

/**
 * Only the OTLP port now (outside the ephemeral range: no connection of the services takes
 * it meanwhile); the other six are chosen when Jaeger starts, minutes later maybe.
 */
export async function planJaeger(): Promise<JaegerPlan> {
  const [otlpHttpPort = 0] = await freePorts(1);
  return { otlpHttpPort, otlpEndpoint: `http://${LOOPBACK}:${String(otlpHttpPort)}` };
}

export interface JaegerStart {
  binDir: string;
  plan: JaegerPlan;
  signal: AbortSignal;
  say: Say;
  start: (name: string, program: string, args: string[], env: Record<string, string>) => Promise<Running>;
  /** Stops a start that failed and forgets it. */
  discard: (process: Running) => Promise<void>;
}

/**
 * Jaeger on the planned OTLP port and six ports chosen now; started again on new ones when
 * one of those was taken. The OTLP port cannot move (the services were given it): taken,
 * Jaeger is not started, and the error says so.
 */
export async function startJaeger(options: JaegerStart): Promise<DevJaeger> {
  return startOnFreshPorts(options.say, async () => {
    const { otlpHttpPort } = options.plan;
    if (!(await portFree(otlpHttpPort)))
      throw new DevError(
        `its OTLP port ${LOOPBACK}:${String(otlpHttpPort)}, given to the services at their start, is taken by another process`,
      );
    const launch = await jaegerLaunch(otlpHttpPort);
    const process = await options.start('jaeger', join(options.binDir, 'jaeger-all-in-one'), launch.args, launch.env);
    try {
      await untilAnswering(launch, process, options.signal);
    } catch (error) {
      await options.discard(process);
      throw error;
    }
    return { otlpEndpoint: launch.otlpEndpoint, queryUrl: launch.queryUrl, process };
  });
}

async function untilAnswering(launch: JaegerLaunch, process: Running, signal: AbortSignal): Promise<void> {
  await waitUntil('Jaeger to answer', signal, START_TIMEOUT_MS, async () => {
    if (process.exitCode !== undefined) throw await exitError(process);
    return (await fetch(`${launch.queryUrl}/api/services`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined))?.ok === true;
  });
}

interface TraceAnswer {
  data?: { traceID: string; spans: { processID: string }[]; processes: Record<string, { serviceName: string }> }[] | null;
}

/** One trace as a line: its span count and the services it crossed. */
export function traceLine(trace: NonNullable<TraceAnswer['data']>[number]): { services: string[]; line: string } {
  const services = [...new Set(trace.spans.map((span) => trace.processes[span.processID]?.serviceName ?? '?'))].sort();
  return { services, line: `${String(trace.spans.length)} spans across ${services.join(', ')} (trace ${trace.traceID})` };
}

/**
 * Waits (bounded) for a trace of the gateway that also holds runtimed's and a Runtime
 * Server's spans, and says so in a line; or says what it found when none did in time.
 */
export async function checkTraces(queryUrl: string, signal: AbortSignal): Promise<{ ok: boolean; line: string }> {
  let last = 'no trace of the gateway';
  try {
    await waitUntil('a whole invocation trace in Jaeger', signal, TRACE_TIMEOUT_MS, async () => {
      const query = new URLSearchParams({ service: INVOKE_PATH_SERVICES[0], limit: '20', lookback: '1h' });
      const answer = (await (
        await fetch(`${queryUrl}/api/traces?${query.toString()}`, { signal: AbortSignal.timeout(5_000) })
      ).json()) as TraceAnswer;
      for (const trace of answer.data ?? []) {
        const { services, line } = traceLine(trace);
        last = line;
        if (
          INVOKE_PATH_SERVICES.every((service) => services.includes(service)) &&
          services.some((s) => s.startsWith('kruntimes-runtime-server-'))
        ) {
          return true;
        }
      }
      return false;
    });
  } catch (error) {
    if (signal.aborted) throw error;
    return {
      ok: false,
      line: `traces: FAILED: no invocation trace crossing the gateway, runtimed and a Runtime Server in ${String(TRACE_TIMEOUT_MS / 1000)} s; newest: ${last} (${queryUrl})`,
    };
  }
  return { ok: true, line: `traces: an invocation in Jaeger (${queryUrl}): ${last}` };
}

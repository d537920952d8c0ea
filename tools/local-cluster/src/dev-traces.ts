// `dev up`'s Jaeger (all-in-one, in memory, every port on loopback): the gateway, the
// Runtime Pods' runtimed and Runtime Servers export their spans to it; after the demo, the
// newest trace of an invocation is read back and summarised.
import { jaegerLaunch } from '@kruntimes/testing';
import type { JaegerLaunch } from '@kruntimes/testing';
import { join } from 'node:path';
import { waitUntil } from './dev-components.ts';
import type { Running } from './dev-components.ts';

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

/** Jaeger's ports, chosen before the services start: they export to it from the start, and it may start later. */
export async function planJaeger(): Promise<JaegerLaunch> {
  return jaegerLaunch();
}

export async function startJaeger(options: {
  binDir: string;
  launch: JaegerLaunch;
  signal: AbortSignal;
  start: (name: string, program: string, args: string[], env: Record<string, string>) => Promise<Running>;
}): Promise<DevJaeger> {
  const { launch } = options;
  const process = await options.start('jaeger', join(options.binDir, 'jaeger-all-in-one'), launch.args, launch.env);
  await waitUntil('Jaeger to answer', options.signal, START_TIMEOUT_MS, async () => {
    if (process.exitCode !== undefined) throw new Error(`jaeger exited (${String(process.exitCode)}); see ${process.log}`);
    return (await fetch(`${launch.queryUrl}/api/services`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined))?.ok === true;
  });
  return { otlpEndpoint: launch.otlpEndpoint, queryUrl: launch.queryUrl, process };
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
export async function checkTraces(queryUrl: string, signal: AbortSignal): Promise<string> {
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
    return `traces: FAILED: no invocation trace crossing the gateway, runtimed and a Runtime Server in ${String(TRACE_TIMEOUT_MS / 1000)} s; newest: ${last} (${queryUrl})`;
  }
  return `traces: an invocation in Jaeger (${queryUrl}): ${last}`;
}

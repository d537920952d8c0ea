// The wall bench's gateway section: what the wall costs an invocation as its caller sees
// it, through the whole path (HTTPS keep-alive -> gateway -> runtimed -> Runtime Server), on
// two systems side by side on one control plane: one whose Runtime Pods keep every Run
// apart (perRunUser: user namespaces, a uid per Run) and one whose Runs share a user.
import { Agent } from 'node:https';
import { System } from '@kruntimes/e2e';
import { call, formatLatencies, summarizeLatencies } from '@kruntimes/testing';
import type { Cluster } from '@kruntimes/testing';

const HANDLERS = {
  python: { source: 'def handle(event, context):\n    return event\n', handler: 'main:handle' },
  bash: { source: 'handle() { cat; }\n', handler: 'handle' },
} as const;
type Language = keyof typeof HANDLERS;
const PAYLOAD = Buffer.from('{"n":1}');
const WARMUP = 30;

interface Target {
  system: System;
  url: string;
  agent: Agent;
  headers: Record<string, string>;
  latencies: number[];
}

async function target(system: System, language: Language): Promise<Target> {
  const gateway = system.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  const runtime = `wall-${language}`;
  await system.createRuntime(runtime, { language, runs: 1 });
  const { source, handler } = HANDLERS[language];
  await system.createFunctionRun(`${runtime}-fn`, runtime, source, handler);
  const run = await system.waitReady(`${runtime}-fn`);
  return {
    system,
    url: system.invokeUrl(runtime, run.metadata.uid ?? ''),
    agent: new Agent({ keepAlive: true, maxSockets: 1, ca: gateway.caPem }),
    headers: { authorization: `Bearer ${system.token('alice')}`, 'content-type': 'application/json' },
    latencies: [],
  };
}

async function invokeOnce(on: Target, id: string): Promise<number> {
  const t0 = performance.now();
  const answer = await call(on.url, {
    ca: on.system.gateway?.caPem ?? '',
    headers: { ...on.headers, 'x-kruntime-invocation-id': id },
    body: PAYLOAD,
    agent: on.agent,
  });
  if (answer.status !== 200) throw new Error(`gateway answered ${String(answer.status)}: ${answer.body}`);
  return performance.now() - t0;
}

/** `samples` sequential invokes per side, in turns of `turn` that alternate which side goes first. */
async function measure(open: Target, walled: Target, samples: number, turn: number): Promise<void> {
  for (const side of [open, walled]) for (let i = 0; i < WARMUP; i += 1) await invokeOnce(side, `warm-${String(i)}`);
  for (let done = 0, round = 0; done < samples; done += turn, round += 1) {
    for (const side of round % 2 === 0 ? [open, walled] : [walled, open]) {
      for (let i = 0; i < turn; i += 1) side.latencies.push(await invokeOnce(side, `m-${String(done + i)}`));
    }
  }
}

/** The report lines: per language, p50/p99 of each side and the walled/open ratio beside its floor. */
export async function measureWallThroughGateway(cluster: Cluster, samples: number, turn: number): Promise<string[]> {
  const open = await System.start({ prefix: 'wall-open', cluster, runIsolation: 'sharedUser' });
  const lines: string[] = [];
  try {
    const walled = await System.start({ prefix: 'wall-walled', cluster, runIsolation: 'perRunUser' });
    try {
      for (const system of [open, walled]) await system.grantGetRuns('alice');
      for (const language of ['bash', 'python'] as const) {
        const [openSide, walledSide] = [await target(open, language), await target(walled, language)];
        try {
          await measure(openSide, walledSide, samples, turn);
        } finally {
          openSide.agent.destroy();
          walledSide.agent.destroy();
        }
        const [o, w] = [summarizeLatencies(openSide.latencies), summarizeLatencies(walledSide.latencies)];
        const ratio = w.p50 / o.p50;
        lines.push(
          `${language} gateway invoke open:   ${formatLatencies(o)}`,
          `${language} gateway invoke walled: ${formatLatencies(w)}`,
          `${language} gateway invoke p50 walled / open: ${ratio.toFixed(3)} (floor: at most 1.05) ${ratio <= 1.05 ? 'ok' : 'OVER'}`,
        );
      }
    } finally {
      await walled.stop();
    }
  } finally {
    await open.stop();
  }
  return lines;
}

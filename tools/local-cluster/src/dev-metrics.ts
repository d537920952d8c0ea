// `dev up`'s Prometheus: started on loopback after the services, scraping them and every
// Runtime Pod as the chart's monitors would; after the demo, every dashboard query is
// evaluated through it and the report printed.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT, freePorts } from '@kruntimes/testing';
import { dashboardQueriesIn, evaluateQueries, formatDashboardReport } from './dashboard-queries.ts';
import type { DashboardReport, ExpectedEmpty } from './dashboard-queries.ts';
import { waitUntil } from './dev-components.ts';
import type { Running, Say } from './dev-components.ts';
import { exitError, startOnFreshPorts } from './dev-ports.ts';
import { prometheusArgs, prometheusConfigYaml } from './dev-prometheus.ts';
import type { ScrapedService } from './dev-prometheus.ts';

/** Short, so that the check after the demo needs only a few seconds of scrapes. */
export const SCRAPE_INTERVAL_SECONDS = 1;
/** The rate window the check uses for `$__rate_interval`: the whole demo fits in it. */
const CHECK_RATE_INTERVAL = '5m';
const START_TIMEOUT_MS = 60_000;
const SCRAPES_TIMEOUT_MS = 30_000;

/**
 * Panels the demo's traffic cannot fill, and why. Everything else must show data after the
 * demo: its empty result is a failure of the check.
 */
export const DEMO_EXPECTED_EMPTY: ExpectedEmpty = new Map<string, string>([
  ['Errors per Run', 'no invocation failed'],
  ['Peer hops', 'one Pod per Runtime: nothing is forwarded'],
  ['Recoveries by cause', 'no Pod was lost: nothing was recovered'],
  ['Recoveries by outcome', 'no Pod was lost: nothing was recovered'],
  ['Fence wait', 'no Pod was lost: nothing was recovered'],
  ['Scheduled times: created, skipped, missed', 'the demo has no RunSchedule'],
  ['Schedule lateness', 'the demo has no RunSchedule'],
]);

export interface DevPrometheus {
  url: string;
  process: Running;
}

export interface PrometheusStart {
  dir: string;
  binDir: string;
  systemNamespace: string;
  services: readonly ScrapedService[];
  kubeconfigFile: string;
  signal: AbortSignal;
  say: Say;
  start: (name: string, program: string, args: string[]) => Promise<Running>;
  /** Stops a start that failed and forgets it. */
  discard: (process: Running) => Promise<void>;
}

/** Prometheus on a port chosen just before it starts; started again on a new one when that was taken. */
export async function startPrometheus(options: PrometheusStart): Promise<DevPrometheus> {
  const home = join(options.dir, 'prometheus');
  await mkdir(join(home, 'data'), { recursive: true, mode: 0o700 });
  const configFile = join(home, 'prometheus.yml');
  await writeFile(
    configFile,
    prometheusConfigYaml({
      systemNamespace: options.systemNamespace,
      services: options.services,
      kubeconfigFile: options.kubeconfigFile,
      scrapeIntervalSeconds: SCRAPE_INTERVAL_SECONDS,
    }),
  );
  return startOnFreshPorts(options.say, async () => {
    const [port = 0] = await freePorts(1);
    const listen = `127.0.0.1:${String(port)}`;
    const args = prometheusArgs({ configFile, dataDir: join(home, 'data'), listen });
    const process = await options.start('prometheus', join(options.binDir, 'prometheus'), args);
    const url = `http://${listen}`;
    try {
      await waitUntil('Prometheus to be ready', options.signal, START_TIMEOUT_MS, async () => {
        if (process.exitCode !== undefined) throw await exitError(process);
        return (await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined))?.ok === true;
      });
    } catch (error) {
      await options.discard(process);
      throw error;
    }
    return { url, process };
  });
}

interface TargetsAnswer {
  data?: { activeTargets?: { health?: string; lastScrape?: string; scrapeUrl?: string; lastError?: string }[] };
}

/**
 * Waits until at least `minTargets` targets are active, all up and each scraped after
 * `since` (so their series hold what happened before it); returns how many there are.
 * Targets of new Pods appear only after the discovery's next update (up to 5 s).
 */
export async function waitForScrapes(url: string, since: Date, minTargets: number, signal: AbortSignal): Promise<number> {
  let targets: NonNullable<NonNullable<TargetsAnswer['data']>['activeTargets']> = [];
  const after = since.getTime() + SCRAPE_INTERVAL_SECONDS * 1000;
  await waitUntil(`a scrape of every target (at least ${String(minTargets)})`, signal, SCRAPES_TIMEOUT_MS, async () => {
    const answer = (await (
      await fetch(`${url}/api/v1/targets?state=active`, { signal: AbortSignal.timeout(5_000) })
    ).json()) as TargetsAnswer;
    targets = answer.data?.activeTargets ?? [];
    return targets.length >= Math.max(1, minTargets) && targets.every((t) => t.health === 'up' && Date.parse(t.lastScrape ?? '') > after);
  }).catch((error: unknown) => {
    const down = targets.filter((t) => t.health !== 'up').map((t) => `${t.scrapeUrl ?? '?'} (${t.lastError ?? t.health ?? '?'})`);
    throw new Error(
      `${error instanceof Error ? error.message : String(error)}; ${String(targets.length)} active, not up: ${down.join(', ') || 'none'}`,
    );
  });
  return targets.length;
}

/** After a scrape of every target that follows now, every query of the chart's dashboards evaluated. */
export async function checkDashboards(
  url: string,
  signal: AbortSignal,
  expectedEmpty: ExpectedEmpty = DEMO_EXPECTED_EMPTY,
): Promise<DashboardReport> {
  const targets = await waitForScrapes(url, new Date(), 1, signal);
  const queries = await dashboardQueriesIn(join(REPO_ROOT, 'deploy/charts/kruntimes/dashboards'));
  const report = formatDashboardReport(await evaluateQueries(url, queries, { rateInterval: CHECK_RATE_INTERVAL }), expectedEmpty);
  report.lines[0] = `${report.lines[0] ?? ''} (${String(targets)} targets up)`;
  return report;
}

import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { UsageError } from './options.ts';

export const DEV_SUBCOMMANDS = ['up', 'down', 'status', 'env', 'logs'] as const;
export type DevSubcommand = (typeof DEV_SUBCOMMANDS)[number];

export interface DevOptions {
  subcommand: DevSubcommand;
  /** The state directory: state.json, kubeconfigs, CAs, every component's log. */
  dir: string;
  /** up: tear everything down after printing the demo's results. */
  once: boolean;
  /** up: without Prometheus and the dashboards' check (--no-prometheus). */
  noPrometheus: boolean;
  /** up: without Jaeger and the traces (--no-jaeger). */
  noJaeger: boolean;
  /** logs: COMPONENT, POD/CONTAINER or NAMESPACE/POD/CONTAINER; absent: list what there is. */
  target?: string;
}

export const DEV_USAGE = `Usage: krt dev up|down|status|env|logs [TARGET] [--dir DIR] [--once] [--no-prometheus] [--no-jaeger]
       node tools/local-cluster/src/dev.ts up|down|status|env|logs [TARGET] [--dir DIR] [--once] [--no-prometheus] [--no-jaeger]

  up       the local cluster (etcd, kube-apiserver, kube-controller-manager, the local node
           agent), the CRDs and RBAC, every kruntimes service, and the demo (namespace demo,
           a Python and a Bash function invoked through the HTTPS gateway as a non-admin
           ServiceAccount), Prometheus scraping it all as the chart's monitors would, and
           Jaeger receiving the invoke path's spans (one trace per invocation);
           after the demo, every query of the chart's dashboards is evaluated through
           Prometheus and reported; stays in the foreground until Ctrl-C or \`krt dev down\`
  down     stops every process of the state directory (SIGTERM, SIGKILL after a grace) and
           checks that no listening port is left
  status   which components run (pid alive, health)
  env      the KUBECONFIG to export and the gateway URL
  logs     a component's log (scheduler, controller-manager, ...) or a Pod container's
           (POD/CONTAINER); without TARGET: what there is

  --dir DIR   state directory (default: $KRT_DEV_DIR, else <repo>/tmp/dev)
  --once      up: tear everything down after printing the results (one-shot mode)
  --no-prometheus  up: without Prometheus (and without the dashboards' check)
  --no-jaeger      up: without Jaeger (no spans are exported)`;

export function parseDevArgs(argv: readonly string[], defaultDir: string): DevOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        dir: { type: 'string' },
        once: { type: 'boolean', default: false },
        'no-prometheus': { type: 'boolean', default: false },
        'no-jaeger': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: true,
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) throw new UsageError('');
  const [subcommand = 'up', target, ...rest] = positionals;
  if (!isSubcommand(subcommand)) throw new UsageError(`unknown subcommand ${JSON.stringify(subcommand)}`);
  if (rest.length > 0 || (target !== undefined && subcommand !== 'logs')) throw new UsageError(`too many arguments for ${subcommand}`);
  if (values.once && subcommand !== 'up') throw new UsageError('--once goes with up only');
  if (values['no-prometheus'] && subcommand !== 'up') throw new UsageError('--no-prometheus goes with up only');
  if (values['no-jaeger'] && subcommand !== 'up') throw new UsageError('--no-jaeger goes with up only');
  if (values.dir === '') throw new UsageError('--dir must not be empty');
  return {
    subcommand,
    dir: resolve(values.dir ?? defaultDir),
    once: values.once,
    noPrometheus: values['no-prometheus'],
    noJaeger: values['no-jaeger'],
    ...(target === undefined ? {} : { target }),
  };
}

function isSubcommand(value: string): value is DevSubcommand {
  return (DEV_SUBCOMMANDS as readonly string[]).includes(value);
}

// controller-manager: wiring only (logic in @kruntimes/controller-manager-core, including the RunInput controller, and,
// for RunSchedules, @kruntimes/schedule-core).
//   --kubeconfig PATH                     default: KUBECONFIG, then in-cluster
//   --namespace NS                        watch one namespace (default: all)
//   --lease-namespace NS                  default: POD_NAMESPACE, else kruntimes-system
//   --lease-name NAME                     default: kruntimes-controller-manager
//   --lease-duration-seconds N            default 15; --renew-deadline-seconds 10; --retry-period-seconds 2
//   --runtimed-image IMAGE                default kruntimes/runtimed:latest
//   --python-image IMAGE, --bash-image IMAGE   Runtime Server images per language
//   --runtime-service-account NAME        service account of Runtime Pods (default kruntimes-runtimed)
//   --runtime-server-listen loopback|podIP   podIP only on the local node (default loopback)
//   --finished-runs-per-runtime N         completed-Run GC keeps this many (default 100)
//   --internal-ca-dir DIR                 required: ca.crt + ca.key of the internal CA (the mounted
//                                         Secret kruntimes-internal-ca); signs each Runtime's runtimed TLS Secret
//   --log-level LEVEL                     default info (env KRT_LOG_LEVEL)
//   --metrics-address HOST:PORT           Prometheus /metrics (plaintext; default: off)
//   --gateway-host HOST[:PORT]            the runtime-gateway function Runs' status.endpoint points at
//                                         (Runtime Pods' KRT_GATEWAY_HOST; default: runtimed's own)
//   --gateway-ca-file FILE                PEM certificate(s) of the gateway's CA, read at start; copied as
//                                         gateway-ca.crt into each runtimed TLS Secret, published as caBundle
//   --runtime-otlp-endpoint URL           OTLP endpoint (HTTP/protobuf) of Runtime Pods' spans: their
//                                         OTEL_EXPORTER_OTLP_ENDPOINT (default: none, tracing off there)
//   --runtimed-cpu-request Q, --runtimed-memory-request Q, --runtimed-memory-limit Q
//                                         resources of every Runtime Pod's runtimed container (default: none);
//                                         its V8 heap flags (NODE_OPTIONS) follow the memory limit
//   --automatic-retry true|false          the cluster retry policy, as stale-recovery's flag: false puts
//                                         KRT_AUTOMATIC_RETRY=false on runtimed, which then does not run an
//                                         execution its Pod lost again (default true, env KRT_AUTOMATIC_RETRY)
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PooledKubeConfig, runLeaderElectedProcess, startMetricsEndpoint } from '@kruntimes/controller-runtime';
import {
  ControllerManager,
  DEFAULT_FINISHED_RUNS_PER_RUNTIME,
  InputMetrics,
  ManagerMetrics,
  validateGatewayCaPem,
  validateGatewayHost,
} from '@kruntimes/controller-manager-core';
import type { ControllerManagerOptions } from '@kruntimes/controller-manager-core';
import { OriginController } from '@kruntimes/local-run-core';
import { ScheduleController, ScheduleMetrics } from '@kruntimes/schedule-core';
import type { ResourceRequirements } from '@kruntimes/api';
import { memoryQuantityBytes } from '@kruntimes/runtime-workload';
import { validateCertificateAuthority } from '@kruntimes/workload-pki';
import { pino } from 'pino';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    namespace: { type: 'string' },
    'lease-namespace': { type: 'string' },
    'lease-name': { type: 'string', default: 'kruntimes-controller-manager' },
    'lease-duration-seconds': { type: 'string', default: '15' },
    'renew-deadline-seconds': { type: 'string', default: '10' },
    'retry-period-seconds': { type: 'string', default: '2' },
    'runtimed-image': { type: 'string', default: 'kruntimes/runtimed:latest' },
    'python-image': { type: 'string', default: 'kruntimes/runtime-server-python:latest' },
    'bash-image': { type: 'string', default: 'kruntimes/runtime-server-bash:latest' },
    'runtime-service-account': { type: 'string', default: 'kruntimes-runtimed' },
    'runtime-server-listen': { type: 'string', default: 'loopback' },
    'finished-runs-per-runtime': { type: 'string', default: String(DEFAULT_FINISHED_RUNS_PER_RUNTIME) },
    'internal-ca-dir': { type: 'string' },
    'log-level': { type: 'string' },
    'metrics-address': { type: 'string' },
    'gateway-host': { type: 'string' },
    'gateway-ca-file': { type: 'string' },
    'runtime-otlp-endpoint': { type: 'string' },
    'runtimed-cpu-request': { type: 'string' },
    'runtimed-memory-request': { type: 'string' },
    'runtimed-memory-limit': { type: 'string' },
    'automatic-retry': { type: 'string' },
  },
  strict: true,
});

const logger = pino({
  name: 'controller-manager',
  level: values['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
  redact: ['*.authorization', '*.token'],
});

function number(flag: string, value: string, minimum: number): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < minimum)
    throw new Error(`--${flag} must be a number >= ${minimum}, not ${JSON.stringify(value)}`);
  return parsed;
}

/** ca.crt and ca.key of --internal-ca-dir; a missing flag or file stops the start with the reason. */
async function internalCa(dir: string | undefined): Promise<{ certPem: string; keyPem: string }> {
  if (dir === undefined) throw new Error('--internal-ca-dir is required: the directory with ca.crt and ca.key of the internal CA');
  const [certPem, keyPem] = await Promise.all([readFile(join(dir, 'ca.crt'), 'utf8'), readFile(join(dir, 'ca.key'), 'utf8')]);
  // Before leader election: a broken CA is a configuration error to report at once, not on taking the lease.
  // Read once: rotating the CA means restarting the controller-manager (Runtime certificates then get reissued).
  validateCertificateAuthority({ certPem, keyPem });
  return { certPem, keyPem };
}

/** --gateway-host and --gateway-ca-file, checked before leader election like the CA. */
async function gatewayEndpoint(
  host: string | undefined,
  caFile: string | undefined,
): Promise<ControllerManagerOptions['workload']['gateway']> {
  if (host === undefined) {
    if (caFile !== undefined) throw new Error('--gateway-ca-file needs --gateway-host: the CA is of the gateway that host names');
    return undefined;
  }
  validateGatewayHost(host);
  if (caFile === undefined) return { host };
  // Read once: a rotated gateway CA reaches the Runtimes' Secrets when the controller-manager restarts.
  const caPem = await readFile(caFile, 'utf8').catch((error: unknown) => {
    throw new Error(`--gateway-ca-file ${caFile} cannot be read`, { cause: error });
  });
  return { host, caPem: validateGatewayCaPem(caPem, `--gateway-ca-file ${caFile}`) };
}

/** runtimed's container resources from the --runtimed-* flags, each checked; undefined when none is set. */
function runtimedResources(): ResourceRequirements | undefined {
  const quantity = (flag: string, value: string | undefined, valid: (text: string) => boolean): string | undefined => {
    if (value === undefined || value === '') return undefined;
    if (!valid(value))
      throw new Error(`--${flag} must be a quantity such as ${flag.includes('cpu') ? '50m' : '96Mi'}, not ${JSON.stringify(value)}`);
    return value;
  };
  const memory = (text: string): boolean => memoryQuantityBytes(text) !== undefined;
  const cpu = (text: string): boolean => /^(\d+m|\d+(\.\d+)?)$/.test(text);
  const cpuRequest = quantity('runtimed-cpu-request', values['runtimed-cpu-request'], cpu);
  const memoryRequest = quantity('runtimed-memory-request', values['runtimed-memory-request'], memory);
  const memoryLimit = quantity('runtimed-memory-limit', values['runtimed-memory-limit'], memory);
  const requests = {
    ...(cpuRequest === undefined ? {} : { cpu: cpuRequest }),
    ...(memoryRequest === undefined ? {} : { memory: memoryRequest }),
  };
  const limits = memoryLimit === undefined ? {} : { memory: memoryLimit };
  if (Object.keys(requests).length === 0 && Object.keys(limits).length === 0) return undefined;
  return { ...(Object.keys(requests).length === 0 ? {} : { requests }), ...(Object.keys(limits).length === 0 ? {} : { limits }) };
}

try {
  const listen = values['runtime-server-listen'];
  const resources = runtimedResources();
  const ca = await internalCa(values['internal-ca-dir']);
  const gateway = await gatewayEndpoint(values['gateway-host'], values['gateway-ca-file']);
  const otlpEndpoint = values['runtime-otlp-endpoint'] === '' ? undefined : values['runtime-otlp-endpoint'];
  if (otlpEndpoint !== undefined && !/^https?:\/\/./.test(otlpEndpoint))
    throw new Error(`--runtime-otlp-endpoint must be an http:// or https:// URL, not ${JSON.stringify(otlpEndpoint)}`);
  const automaticRetry = values['automatic-retry'] ?? process.env.KRT_AUTOMATIC_RETRY ?? 'true';
  if (automaticRetry !== 'true' && automaticRetry !== 'false')
    throw new Error(`--automatic-retry must be true or false, not ${JSON.stringify(automaticRetry)}`);
  // Served by every replica; only the leader's caches give it series.
  const metrics = new ManagerMetrics();
  const scheduleMetrics = new ScheduleMetrics();
  const inputMetrics = new InputMetrics();
  if (values['metrics-address'] !== undefined) {
    const endpoint = await startMetricsEndpoint(
      values['metrics-address'],
      () => metrics.render() + scheduleMetrics.render() + inputMetrics.render(),
    );
    logger.info({ address: endpoint.address }, 'metrics listening');
  }
  if (listen !== 'loopback' && listen !== 'podIP')
    throw new Error(`--runtime-server-listen must be loopback or podIP, not ${JSON.stringify(listen)}`);
  const kubeConfig = new PooledKubeConfig();
  if (values.kubeconfig === undefined) kubeConfig.loadFromDefault();
  else kubeConfig.loadFromFile(values.kubeconfig);
  const exitCode = await runLeaderElectedProcess({
    component: 'the controllers',
    kubeConfig,
    namespace: values['lease-namespace'] ?? process.env.POD_NAMESPACE ?? 'kruntimes-system',
    leaseName: values['lease-name'],
    logger,
    leaseDurationSeconds: number('lease-duration-seconds', values['lease-duration-seconds'], 1),
    renewDeadlineSeconds: number('renew-deadline-seconds', values['renew-deadline-seconds'], 1),
    retryPeriodSeconds: number('retry-period-seconds', values['retry-period-seconds'], 1),
    create: () => {
      const manager = new ControllerManager({
        kubeConfig,
        ...(values.namespace === undefined ? {} : { namespace: values.namespace }),
        logger,
        workload: {
          runtimedImage: values['runtimed-image'],
          runtimeServerImages: { python: values['python-image'], bash: values['bash-image'] },
          serviceAccountName: values['runtime-service-account'],
          runtimeServerListen: listen,
          ...(gateway === undefined ? {} : { gateway }),
          ...(otlpEndpoint === undefined ? {} : { otlpEndpoint }),
          ...(resources === undefined ? {} : { runtimedResources: resources }),
          automaticRetry: automaticRetry === 'true',
        },
        finishedRunsPerRuntime: number('finished-runs-per-runtime', values['finished-runs-per-runtime'], 0),
        internalCa: ca,
        metrics,
        inputMetrics,
      });
      const schedules = new ScheduleController({
        kubeConfig,
        ...(values.namespace === undefined ? {} : { namespace: values.namespace }),
        logger,
        metrics: scheduleMetrics,
      });
      // Runs synced from `krt run --local` (spec.origin): Pending -> their recorded terminal phase.
      const origins = new OriginController({
        kubeConfig,
        ...(values.namespace === undefined ? {} : { namespace: values.namespace }),
        logger,
      });
      // One term, every controller: started together, stopped together.
      return {
        start: async () => {
          await Promise.all([manager.start(), schedules.start(), origins.start()]);
        },
        stop: async () => {
          await Promise.all([manager.stop(), schedules.stop(), origins.stop()]);
        },
      };
    },
  });
  process.exit(exitCode);
} catch (error) {
  logger.fatal({ err: error }, 'controller-manager failed');
  process.exitCode = 1;
}

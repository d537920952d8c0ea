// Prometheus for the local cluster: a scrape configuration that follows the chart's
// ServiceMonitors and PodMonitor as prometheus-operator turns them into scrape jobs, so that
// the dashboards are evaluated on the series a cluster with the chart would have.
import { stringify } from 'yaml';

export interface ScrapedService {
  /** The Service's name in the chart (the job label prometheus-operator gives its targets). */
  service: string;
  /** host:port of its /metrics. */
  address: string;
  /** The chart's ServiceMonitor sets honorLabels: the series' own namespace label wins. */
  honorLabels: boolean;
}

export interface PrometheusConfigInput {
  /** Where the services run (the chart's release namespace). */
  systemNamespace: string;
  services: readonly ScrapedService[];
  /** A kubeconfig whose identity may list and watch Pods in every namespace (pod discovery). */
  kubeconfigFile: string;
  scrapeIntervalSeconds: number;
}

/** The PodMonitor of the chart, per Runtime namespace (deploy/charts/kruntimes/templates/runtime-namespaces.yaml). */
export const RUNTIMED_POD_MONITOR = {
  name: 'kruntimes-runtimed',
  /** The runtimed container port the PodMonitor names. */
  port: 'metrics',
  selector: { 'app.kubernetes.io/component': 'runtime', 'app.kubernetes.io/managed-by': 'kruntimes-controller-manager' },
} as const;

/** A pod label's discovery meta label, as Prometheus sanitises the name. */
const podLabel = (name: string): string => `__meta_kubernetes_pod_label_${name.replace(/[^A-Za-z0-9_]/g, '_')}`;

/**
 * prometheus.yml as an object. Services: one static job each, with the target labels an
 * operator-made ServiceMonitor job carries (namespace, service, endpoint). Runtime Pods:
 * Pod discovery kept to the PodMonitor's selector and named port, relabelled as the
 * operator does (namespace, pod, container, endpoint, job `<namespace>/<monitor>`), plus
 * the PodMonitor's own relabelling to `runtime`.
 */
export function prometheusConfig(input: PrometheusConfigInput): Record<string, unknown> {
  const interval = `${String(input.scrapeIntervalSeconds)}s`;
  const services = input.services.map((s) => ({
    job_name: `serviceMonitor/${input.systemNamespace}/${s.service}/0`,
    honor_labels: s.honorLabels,
    metrics_path: '/metrics',
    scheme: 'http',
    static_configs: [
      { targets: [s.address], labels: { job: s.service, namespace: input.systemNamespace, service: s.service, endpoint: 'metrics' } },
    ],
  }));
  const keepSelector = Object.entries(RUNTIMED_POD_MONITOR.selector).map(([label, value]) => ({
    action: 'keep',
    source_labels: [podLabel(label)],
    regex: value,
  }));
  const runtimed = {
    job_name: `podMonitor/${RUNTIMED_POD_MONITOR.name}/0`,
    honor_labels: false,
    metrics_path: '/metrics',
    kubernetes_sd_configs: [{ role: 'pod', kubeconfig_file: input.kubeconfigFile }],
    relabel_configs: [
      ...keepSelector,
      { action: 'keep', source_labels: ['__meta_kubernetes_pod_container_port_name'], regex: RUNTIMED_POD_MONITOR.port },
      // The operator never scrapes Pods that ended.
      { action: 'drop', source_labels: ['__meta_kubernetes_pod_phase'], regex: '(Failed|Succeeded)' },
      { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
      { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
      { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
      { replacement: RUNTIMED_POD_MONITOR.port, target_label: 'endpoint' },
      { source_labels: ['__meta_kubernetes_namespace'], target_label: 'job', replacement: `\${1}/${RUNTIMED_POD_MONITOR.name}` },
      // The PodMonitor's own relabelling: the dashboards' Runtime variable.
      { source_labels: [podLabel('kruntimes.io/runtime')], target_label: 'runtime' },
    ],
  };
  return {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    scrape_configs: [...services, runtimed],
  };
}

export function prometheusConfigYaml(input: PrometheusConfigInput): string {
  return `# Written by krt dev up: the chart's ServiceMonitors and PodMonitor as scrape jobs.\n${stringify(prometheusConfig(input))}`;
}

/** Prometheus's own flags: loopback only, data under the state directory, no lifecycle or admin API. */
export function prometheusArgs(options: { configFile: string; dataDir: string; listen: string }): string[] {
  return [
    `--config.file=${options.configFile}`,
    `--storage.tsdb.path=${options.dataDir}`,
    '--storage.tsdb.retention.time=1d',
    `--web.listen-address=${options.listen}`,
    '--log.format=json',
  ];
}

import { parse } from 'yaml';
import { prometheusArgs, prometheusConfig, prometheusConfigYaml } from './dev-prometheus.ts';

const input = {
  systemNamespace: 'kruntimes-system',
  services: [
    { service: 'kruntimes-scheduler-metrics', address: '127.0.0.1:9001', honorLabels: false },
    { service: 'kruntimes-controller-manager-metrics', address: '127.0.0.1:9002', honorLabels: true },
  ],
  kubeconfigFile: '/dev-dir/prometheus.kubeconfig',
  scrapeIntervalSeconds: 1,
};

test('a static job per service with the labels of an operator-made ServiceMonitor job', () => {
  const config = prometheusConfig(input) as { scrape_configs: Record<string, unknown>[]; global: Record<string, unknown> };
  expect(config.global).toEqual({ scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' });
  expect(config.scrape_configs.slice(0, 2)).toEqual([
    {
      job_name: 'serviceMonitor/kruntimes-system/kruntimes-scheduler-metrics/0',
      honor_labels: false,
      metrics_path: '/metrics',
      scheme: 'http',
      static_configs: [
        {
          targets: ['127.0.0.1:9001'],
          labels: {
            job: 'kruntimes-scheduler-metrics',
            namespace: 'kruntimes-system',
            service: 'kruntimes-scheduler-metrics',
            endpoint: 'metrics',
          },
        },
      ],
    },
    expect.objectContaining({ honor_labels: true, job_name: 'serviceMonitor/kruntimes-system/kruntimes-controller-manager-metrics/0' }),
  ]);
});

test("Runtime Pods: the PodMonitor's selector and named port, relabelled as the operator does, plus runtime", () => {
  const config = prometheusConfig(input) as {
    scrape_configs: { relabel_configs?: Record<string, unknown>[]; kubernetes_sd_configs?: unknown }[];
  };
  const pods = config.scrape_configs[2];
  expect(pods?.kubernetes_sd_configs).toEqual([{ role: 'pod', kubeconfig_file: '/dev-dir/prometheus.kubeconfig' }]);
  expect(pods?.relabel_configs).toEqual([
    { action: 'keep', source_labels: ['__meta_kubernetes_pod_label_app_kubernetes_io_component'], regex: 'runtime' },
    { action: 'keep', source_labels: ['__meta_kubernetes_pod_label_app_kubernetes_io_managed_by'], regex: 'kruntimes-controller-manager' },
    { action: 'keep', source_labels: ['__meta_kubernetes_pod_container_port_name'], regex: 'metrics' },
    { action: 'drop', source_labels: ['__meta_kubernetes_pod_phase'], regex: '(Failed|Succeeded)' },
    { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
    { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
    { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
    { replacement: 'metrics', target_label: 'endpoint' },
    { source_labels: ['__meta_kubernetes_namespace'], target_label: 'job', replacement: '${1}/kruntimes-runtimed' },
    { source_labels: ['__meta_kubernetes_pod_label_kruntimes_io_runtime'], target_label: 'runtime' },
  ]);
});

test('the YAML reads back as the same configuration', () => {
  expect(parse(prometheusConfigYaml(input))).toEqual(prometheusConfig(input));
});

test('Prometheus listens where it is told and keeps its data in the state directory', () => {
  expect(prometheusArgs({ configFile: '/d/p.yml', dataDir: '/d/data', listen: '127.0.0.1:9090' })).toEqual([
    '--config.file=/d/p.yml',
    '--storage.tsdb.path=/d/data',
    '--storage.tsdb.retention.time=1d',
    '--web.listen-address=127.0.0.1:9090',
    '--log.format=json',
  ]);
});

// The local node agent as a process: `node tools/local-node/src/main.ts --config node.json
// [--kubeconfig path]`. SIGTERM or SIGINT stops every Pod process it started, then exits.
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { loadConfigFile } from './config.ts';
import { LocalNode } from './local-node.ts';
import type { LocalNodeLogger } from './local-node.ts';

const { values } = parseArgs({ options: { config: { type: 'string' }, kubeconfig: { type: 'string' } } });
if (values.config === undefined) {
  process.stderr.write('usage: main.ts --config <local-node.json> [--kubeconfig <path>]\n');
  process.exit(2);
}

// Logs go to stderr: stdout carries the one `ready <node>` line that supervisors wait for.
const logger: LocalNodeLogger = pino({ name: 'local-node', level: process.env.KRT_LOG_LEVEL ?? 'info' }, pino.destination(2));

const kubeConfig = new KubeConfig();
if (values.kubeconfig === undefined) kubeConfig.loadFromDefault();
else kubeConfig.loadFromFile(values.kubeconfig);

const node = new LocalNode(kubeConfig, await loadConfigFile(values.config), { logger });
node.events.on('event', (event) => {
  logger.info(event, event.type);
});

let stopping = false;
const stop = (signal: string): void => {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'stopping every Pod process');
  node.stop().then(
    () => process.exit(0),
    (error: unknown) => {
      logger.error({ err: error }, 'stop failed');
      process.exit(1);
    },
  );
};
process.on('SIGTERM', () => {
  stop('SIGTERM');
});
process.on('SIGINT', () => {
  stop('SIGINT');
});

await node.start();
logger.info({ node: node.nodeName }, 'local node agent running');
process.stdout.write(`ready ${node.nodeName}\n`);

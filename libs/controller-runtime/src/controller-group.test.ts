import { KubeConfig } from '@kubernetes/client-node';
import { ControllerGroup } from './controller-group.ts';
import type { Worker } from './controller-group.ts';
import { InformerFactory } from './informer-factory.ts';

const logger = { error: () => undefined, debug: () => undefined };

/** Records the start and stop of a factory (one that makes no informer touches no API server). */
function record(factory: InformerFactory, events: string[]): void {
  const { start, stop } = { start: factory.start.bind(factory), stop: factory.stop.bind(factory) };
  factory.start = async () => {
    await start();
    events.push('informers started');
  };
  factory.stop = async () => {
    await stop();
    events.push('informers stopped');
  };
}

const worker = (name: string, events: string[]): Worker => ({
  start: () => events.push(`${name} started`),
  stop: () => {
    events.push(`${name} stopped`);
    return Promise.resolve();
  },
});

const cases: [string, boolean, string[]][] = [
  [
    'its own informers: synced before the workers start, stopped after them',
    false,
    ['informers started', 'a started', 'b started', 'a stopped', 'b stopped', 'drained', 'informers stopped'],
  ],
  [
    "shared informers: started (synced already), never stopped: they are the Manager's",
    true,
    ['informers started', 'a started', 'b started', 'a stopped', 'b stopped', 'drained'],
  ],
];

test.each(cases)('%s', async (_name, shared, expected) => {
  const events: string[] = [];
  const kubeConfig = new KubeConfig();
  const sharedFactory = shared ? new InformerFactory({ kubeConfig, logger }) : undefined;
  const group = new ControllerGroup({ kubeConfig, logger, informers: sharedFactory });
  record(group.informers, events);
  group.add(worker('a', events), worker('b', events));
  await group.start();
  await group.stop(() => {
    events.push('drained');
    return Promise.resolve();
  });
  expect(events).toEqual(expected);
  expect(group.informers === sharedFactory).toBe(shared);
});

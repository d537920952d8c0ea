import { KubeConfig } from '@kubernetes/client-node';
import type { LeaderCallbacks } from './leader-election.ts';
import { Manager } from './manager.ts';
import type { Elector, ManagerLogger, Runnable } from './manager.ts';

/** What the fakes did, in order: `start a`, `stop a`, ... */
type Journal = string[];

function recordingLogger(): ManagerLogger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (_object, message) => lines.push(message),
    error: (_object, message) => lines.push(message),
    debug: () => undefined,
  };
}

interface FakeOptions {
  needsLeaderElection?: boolean;
  /** start rejects with this. */
  failure?: Error;
  /** start resolves only once this does. */
  startedWhen?: Promise<void>;
}

function fake(journal: Journal, name: string, options: FakeOptions = {}): Runnable {
  return {
    name,
    ...(options.needsLeaderElection === undefined ? {} : { needsLeaderElection: options.needsLeaderElection }),
    start: async () => {
      journal.push(`start ${name}`);
      await options.startedWhen;
      if (options.failure !== undefined) throw options.failure;
      journal.push(`running ${name}`);
    },
    stop: () => {
      journal.push(`stop ${name}`);
    },
  };
}

/** An elector the test drives: `lead()` starts a term, `lose()` ends it without a stop. */
class FakeElector implements Elector {
  stopped = false;
  readonly #journal: Journal;
  readonly #term = new AbortController();
  #led: (() => void) | undefined;
  readonly #ended: Promise<void>;
  #end: () => void = () => undefined;

  constructor(journal: Journal) {
    this.#journal = journal;
    this.#ended = new Promise((resolve) => (this.#end = resolve));
  }

  async run(callbacks: LeaderCallbacks): Promise<void> {
    this.#journal.push('campaign');
    const led = new Promise<boolean>((resolve) => {
      this.#led = () => {
        resolve(true);
      };
    });
    const leading = await Promise.race([led, this.#ended.then(() => false)]);
    if (!leading) return;
    const work = Promise.resolve(callbacks.onStartedLeading(this.#term.signal));
    await this.#ended;
    this.#term.abort();
    await work;
    this.#journal.push(this.stopped ? 'release' : 'lost');
  }

  stop(): void {
    this.stopped = true;
    this.#end();
  }

  lead(): void {
    this.#led?.();
  }

  lose(): void {
    this.#end();
  }
}

function manager(logger: ManagerLogger, elector?: Elector): Manager {
  return new Manager({
    kubeConfig: new KubeConfig(),
    logger,
    component: 'the fakes',
    ...(elector === undefined ? {} : { leaderElection: { namespace: 'ns', leaseName: 'fakes', elector } }),
  });
}

/** Resolves once `predicate` holds, polling a bounded number of times. */
async function eventually(predicate: () => boolean, attempts = 200): Promise<void> {
  for (let i = 0; i < attempts; i += 1) {
    if (predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not reached');
}

describe('Manager', () => {
  it('starts the runnables of every replica first, then the leader-elected ones in the order added, and stops them in reverse', async () => {
    const journal: Journal = [];
    const subject = manager(recordingLogger());
    subject.add(fake(journal, 'a'));
    subject.add(fake(journal, 'metrics', { needsLeaderElection: false }));
    subject.add(fake(journal, 'b'));
    const stop = new AbortController();
    const exit = subject.run(stop.signal);
    await eventually(() => journal.includes('running b'));
    stop.abort();
    expect(await exit).toBe(0);
    expect(journal).toEqual([
      'start metrics',
      'running metrics',
      'start a',
      'running a',
      'start b',
      'running b',
      'stop b',
      'stop a',
      'stop metrics',
    ]);
  });

  it('stops the rest when a runnable fails to start, starts none after it, and exits 1', async () => {
    const journal: Journal = [];
    const logger = recordingLogger();
    const subject = manager(logger);
    subject.add(fake(journal, 'metrics', { needsLeaderElection: false }));
    subject.add(fake(journal, 'a'));
    subject.add(fake(journal, 'broken', { failure: new Error('no') }));
    subject.add(fake(journal, 'c'));
    expect(await subject.run(new AbortController().signal)).toBe(1);
    expect(journal).toEqual([
      'start metrics',
      'running metrics',
      'start a',
      'running a',
      'start broken',
      'stop broken',
      'stop a',
      'stop metrics',
    ]);
    expect(logger.lines).toContain('broken failed to start; stopping');
  });

  it('campaigns only after the runnables of every replica started, and a failure among them never campaigns', async () => {
    const journal: Journal = [];
    const elector = new FakeElector(journal);
    const subject = manager(recordingLogger(), elector);
    subject.add(fake(journal, 'metrics', { needsLeaderElection: false, failure: new Error('port taken') }));
    subject.add(fake(journal, 'a'));
    expect(await subject.run(new AbortController().signal)).toBe(1);
    expect(journal).toEqual(['start metrics', 'stop metrics']);
  });

  it('starts the leader-elected runnables only once leading; a lost Lease stops them in reverse and exits 1', async () => {
    const journal: Journal = [];
    const logger = recordingLogger();
    const elector = new FakeElector(journal);
    const subject = manager(logger, elector);
    subject.add(fake(journal, 'a'));
    subject.add(fake(journal, 'b'));
    subject.add(fake(journal, 'metrics', { needsLeaderElection: false }));
    const exit = subject.run(new AbortController().signal);
    await eventually(() => journal.includes('campaign'));
    // A standby: campaigning, its metrics served, no leader-elected runnable started.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(journal).toEqual(['start metrics', 'running metrics', 'campaign']);
    elector.lead();
    await eventually(() => journal.includes('running b'));
    elector.lose();
    expect(await exit).toBe(1);
    expect(journal.slice(3)).toEqual(['start a', 'running a', 'start b', 'running b', 'stop b', 'stop a', 'lost', 'stop metrics']);
    expect(logger.lines).toEqual(expect.arrayContaining(['leading: starting the fakes', 'lost the fakes lease; exiting']));
  });

  it('on stop, stops the leader-elected runnables before the Lease is released, and exits 0', async () => {
    const journal: Journal = [];
    const elector = new FakeElector(journal);
    const subject = manager(recordingLogger(), elector);
    subject.add(fake(journal, 'a'));
    const stop = new AbortController();
    const exit = subject.run(stop.signal);
    await eventually(() => journal.includes('campaign'));
    elector.lead();
    await eventually(() => journal.includes('running a'));
    stop.abort();
    expect(await exit).toBe(0);
    expect(journal).toEqual(['campaign', 'start a', 'running a', 'stop a', 'release']);
  });

  it('a start failing while leading stops the others and the elector (which releases the Lease), and exits 1', async () => {
    const journal: Journal = [];
    const elector = new FakeElector(journal);
    const subject = manager(recordingLogger(), elector);
    subject.add(fake(journal, 'a'));
    subject.add(fake(journal, 'broken', { failure: new Error('no') }));
    subject.add(fake(journal, 'c'));
    const exit = subject.run(new AbortController().signal);
    await eventually(() => journal.includes('campaign'));
    elector.lead();
    expect(await exit).toBe(1);
    expect(elector.stopped).toBe(true);
    expect(journal.slice(1)).toEqual(['start a', 'running a', 'start broken', 'stop broken', 'stop a', 'release']);
  });

  it('a term that ends while a runnable is still starting stops it and those before it, and starts none after it', async () => {
    const journal: Journal = [];
    const elector = new FakeElector(journal);
    const subject = manager(recordingLogger(), elector);
    let synced: () => void = () => undefined;
    subject.add(fake(journal, 'a'));
    subject.add(fake(journal, 'syncing', { startedWhen: new Promise((resolve) => (synced = resolve)) }));
    subject.add(fake(journal, 'c'));
    const exit = subject.run(new AbortController().signal);
    await eventually(() => journal.includes('campaign'));
    elector.lead();
    await eventually(() => journal.includes('start syncing'));
    elector.lose();
    expect(await exit).toBe(1);
    synced();
    expect(journal.slice(1)).toEqual(['start a', 'running a', 'start syncing', 'stop syncing', 'stop a', 'lost']);
  });

  it('stopped before it leads: no leader-elected runnable starts, exits 0', async () => {
    const journal: Journal = [];
    const elector = new FakeElector(journal);
    const subject = manager(recordingLogger(), elector);
    subject.add(fake(journal, 'a'));
    const stop = new AbortController();
    const exit = subject.run(stop.signal);
    await eventually(() => journal.includes('campaign'));
    stop.abort();
    expect(await exit).toBe(0);
    expect(journal).toEqual(['campaign']);
  });

  it('reports its phase: starting, standby while campaigning, syncing until the leader-elected runnables started, running, stopping', async () => {
    const journal: Journal = [];
    const elector = new FakeElector(journal);
    const subject = manager(recordingLogger(), elector);
    let metricsUp: () => void = () => undefined;
    let synced: () => void = () => undefined;
    subject.add(fake(journal, 'metrics', { needsLeaderElection: false, startedWhen: new Promise((resolve) => (metricsUp = resolve)) }));
    subject.add(fake(journal, 'syncing', { startedWhen: new Promise((resolve) => (synced = resolve)) }));
    const phases: string[] = [subject.phase];
    const stop = new AbortController();
    const exit = subject.run(stop.signal);
    await eventually(() => journal.includes('start metrics'));
    phases.push(subject.phase);
    metricsUp();
    await eventually(() => journal.includes('campaign'));
    phases.push(subject.phase);
    elector.lead();
    await eventually(() => journal.includes('start syncing'));
    phases.push(subject.phase);
    synced();
    await eventually(() => journal.includes('running syncing'));
    phases.push(subject.phase);
    stop.abort();
    expect(await exit).toBe(0);
    phases.push(subject.phase);
    expect(phases).toEqual(['starting', 'starting', 'standby', 'syncing', 'running', 'stopping']);
  });

  it('without leader election goes from starting to syncing to running', async () => {
    const journal: Journal = [];
    const subject = manager(recordingLogger());
    let synced: () => void = () => undefined;
    subject.add(fake(journal, 'syncing', { startedWhen: new Promise((resolve) => (synced = resolve)) }));
    const stop = new AbortController();
    const exit = subject.run(stop.signal);
    await eventually(() => journal.includes('start syncing'));
    expect(subject.phase).toBe('syncing');
    synced();
    await eventually(() => journal.includes('running syncing'));
    expect(subject.phase).toBe('running');
    stop.abort();
    expect(await exit).toBe(0);
  });

  it('takes runnables only before it runs, and runs once', async () => {
    const subject = manager(recordingLogger());
    const stop = new AbortController();
    stop.abort();
    expect(await subject.run(stop.signal)).toBe(0);
    expect(() => {
      subject.add(fake([], 'late'));
    }).toThrow('add runnables before run');
    await expect(subject.run(stop.signal)).rejects.toThrow('run once');
  });
});

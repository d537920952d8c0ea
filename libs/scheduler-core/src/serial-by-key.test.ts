import { SerialByKey } from './serial-by-key.ts';

/** A task that records its start and end, and ends when `release` is called. */
function gated(log: string[], name: string): { task: () => Promise<string>; release: () => void } {
  let release = (): void => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    task: async () => {
      log.push(`start ${name}`);
      await gate;
      log.push(`end ${name}`);
      return name;
    },
    release: () => {
      release();
    },
  };
}

describe('SerialByKey', () => {
  it('runs the tasks of one key one after another, and of two keys at once', async () => {
    const serial = new SerialByKey();
    const log: string[] = [];
    const a1 = gated(log, 'a1');
    const a2 = gated(log, 'a2');
    const b1 = gated(log, 'b1');
    const done = [serial.run('a', a1.task), serial.run('a', a2.task), serial.run('b', b1.task)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['start a1', 'start b1']);
    a2.release();
    b1.release();
    a1.release();
    expect(await Promise.all(done)).toEqual(['a1', 'a2', 'b1']);
    expect(log.indexOf('start a2')).toBeGreaterThan(log.indexOf('end a1'));
    expect(serial.size).toBe(0);
  });

  it('a failed task rejects its own caller only; the next of its key still runs', async () => {
    const serial = new SerialByKey();
    const failed = serial.run('a', () => Promise.reject(new Error('boom')));
    const next = serial.run('a', () => Promise.resolve('next'));
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
    expect(serial.size).toBe(0);
  });
});

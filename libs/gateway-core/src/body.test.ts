import { PassThrough } from 'node:stream';
import { KruntimesError } from '@kruntimes/errors';
import { readBoundedBody } from './body.ts';

const LIMIT = 1024;

/** Feeds `chunks` and reports how many bytes were written before the reader stopped listening. */
async function feed(chunks: number[]): Promise<{ body?: Buffer; error?: unknown; listenersLeft: number }> {
  const stream = new PassThrough();
  const reading = readBoundedBody(stream, LIMIT);
  for (const size of chunks) stream.write(Buffer.alloc(size, 0x61));
  stream.end();
  try {
    return { body: await reading, listenersLeft: stream.listenerCount('data') };
  } catch (error) {
    return { error, listenersLeft: stream.listenerCount('data') };
  }
}

describe('readBoundedBody', () => {
  it.each([
    [[], 0],
    [[1], 1],
    [[LIMIT], LIMIT],
    [[LIMIT - 1, 1], LIMIT],
    [[100, 200, 300], 600],
  ])('chunks %j: %d bytes read', async (chunks, total) => {
    const result = await feed(chunks);
    expect(result.body?.length).toBe(total);
  });

  it.each([[[LIMIT + 1]], [[LIMIT, 1]], [[1, LIMIT]], [[LIMIT, 1, LIMIT * 10]]])(
    'chunks %j: PayloadTooLarge, and it stops reading',
    async (chunks) => {
      const result = await feed(chunks);
      expect(result.error).toBeInstanceOf(KruntimesError);
      expect((result.error as KruntimesError).code).toBe('PayloadTooLarge');
      expect(result.listenersLeft).toBe(0);
    },
  );

  it('a stream closed before its end is an error', async () => {
    const stream = new PassThrough();
    const reading = readBoundedBody(stream, LIMIT);
    stream.write('abc');
    stream.destroy();
    await expect(reading).rejects.toThrow(/closed before/);
  });
});

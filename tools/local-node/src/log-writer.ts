import { once } from 'node:events';
import { createWriteStream, mkdirSync } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';
import { formatCriLine, splitRecords } from './container-logs.ts';
import type { LogStream } from './container-logs.ts';

/** Now in nanoseconds since the epoch, to the microsecond; never goes back (a monotonic clock from a fixed origin). */
export function nowNs(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}

/**
 * Writes one container start's stdout and stderr twice: as they come to the plain log of
 * the container (every start appended, as `krt dev logs` and tests read it), and as CRI
 * lines, each with its time and stream, to the start's own file (what the kubelet log
 * endpoint reads: since, timestamps, previous). `closed` resolves once both streams ended
 * and both files have everything.
 */
export class ContainerLogWriter {
  readonly closed: Promise<void>;
  readonly #plain: WriteStream;
  readonly #cri: WriteStream;
  #ended = false;

  constructor(files: { plain: string; cri: string }, streams: { stdout: Readable | null; stderr: Readable | null }) {
    mkdirSync(dirname(files.plain), { recursive: true });
    mkdirSync(dirname(files.cri), { recursive: true });
    this.#plain = createWriteStream(files.plain, { flags: 'a' });
    this.#cri = createWriteStream(files.cri, { flags: 'a' });
    const ended = [this.#pump('stdout', streams.stdout), this.#pump('stderr', streams.stderr)];
    this.closed = Promise.all(ended).then(async () => {
      this.#ended = true;
      this.#plain.end();
      this.#cri.end();
      await Promise.all([once(this.#plain, 'close'), once(this.#cri, 'close')]);
    });
  }

  /** A line of the agent's own about this start (it could not start), on stderr. */
  note(line: string): void {
    if (!this.#ended) this.#write('stderr', Buffer.from(`${line}\n`), true);
  }

  async #pump(stream: LogStream, readable: Readable | null): Promise<void> {
    if (readable === null) return;
    let pending: Buffer = Buffer.alloc(0);
    readable.on('data', (chunk: Buffer) => {
      pending = this.#write(stream, chunk, false, pending);
    });
    // 'close' comes after 'end', and also after an error that ends the pipe early.
    await once(readable, 'close').catch(() => undefined);
    this.#write(stream, Buffer.alloc(0), true, pending);
  }

  #write(stream: LogStream, chunk: Buffer, end: boolean, pending: Buffer = Buffer.alloc(0)): Buffer {
    if (chunk.length > 0) this.#plain.write(chunk);
    const split = splitRecords(pending, chunk, end);
    const timeNs = nowNs();
    for (const record of split.records) {
      this.#cri.write(formatCriLine({ timeNs, stream, partial: record.partial, content: record.content.toString('utf8') }));
    }
    return split.pending;
  }
}

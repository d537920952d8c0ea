import type { CapturedOutput } from '@kruntimes/runtime-server-core';

/** Messages of krt_worker.py on fd 4 (see the docstring there). */
export type ReadyMessage = { readonly ready: true } | { readonly ready: false; readonly error: string };

export type ResponseMessage =
  | {
      readonly ok: true;
      readonly result: string;
      readonly outputs: Record<string, string>;
      readonly stdout: CapturedOutput;
      readonly stderr: CapturedOutput;
    }
  | {
      readonly ok: false;
      readonly kind: 'raised' | 'result_invalid' | 'result_too_large' | 'bad_payload';
      readonly message: string;
      readonly stdout: CapturedOutput;
      readonly stderr: CapturedOutput;
    };

/**
 * Splits the worker's response stream into JSON messages. A line over `maxBytes` is a
 * protocol violation (the worker bounds results itself), reported instead of buffered.
 */
export class JsonLineReader {
  readonly #maxBytes: number;
  #pending: Buffer[] = [];
  #pendingBytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  push(chunk: Buffer): unknown[] {
    const messages: unknown[] = [];
    let rest = chunk;
    for (let newline = rest.indexOf(0x0a); newline !== -1; newline = rest.indexOf(0x0a)) {
      this.#pending.push(rest.subarray(0, newline));
      const line = Buffer.concat(this.#pending).toString('utf8');
      this.#pending = [];
      this.#pendingBytes = 0;
      messages.push(JSON.parse(line));
      rest = rest.subarray(newline + 1);
    }
    this.#pendingBytes += rest.byteLength;
    if (this.#pendingBytes > this.#maxBytes) throw new Error(`worker message exceeds ${this.#maxBytes} bytes`);
    if (rest.byteLength > 0) this.#pending.push(rest);
    return messages;
  }
}

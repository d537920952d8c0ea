import { decodeUtf8Prefix } from './bounded-capture.ts';

export interface Line {
  readonly text: string;
  /** The line was longer than the bound; text holds its head. */
  readonly truncated: boolean;
}

/**
 * Splits a byte stream into lines of at most `maxBytes` without ever buffering more
 * than that: a process that writes gigabytes without a newline produces one truncated
 * line and is otherwise skipped until its next newline.
 */
export class LineSplitter {
  readonly #maxBytes: number;
  #buffer: Buffer = Buffer.alloc(0);
  #skipping = false;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  push(chunk: Buffer): Line[] {
    const lines: Line[] = [];
    let rest = chunk;
    while (rest.byteLength > 0) {
      const newline = rest.indexOf(0x0a);
      const piece = newline === -1 ? rest : rest.subarray(0, newline);
      rest = newline === -1 ? Buffer.alloc(0) : rest.subarray(newline + 1);
      if (!this.#skipping) {
        this.#buffer = Buffer.concat([this.#buffer, piece]);
        if (this.#buffer.byteLength > this.#maxBytes) {
          lines.push(this.#take(true));
          this.#skipping = newline === -1;
          continue;
        }
      }
      if (newline !== -1) {
        if (this.#skipping) this.#skipping = false;
        else lines.push(this.#take(false));
      }
    }
    return lines;
  }

  /** The last line when the stream ended without a newline. */
  end(): Line[] {
    if (this.#skipping || this.#buffer.byteLength === 0) return [];
    return [this.#take(false)];
  }

  #take(truncated: boolean): Line {
    const bytes = truncated ? this.#buffer.subarray(0, this.#maxBytes) : this.#buffer;
    const text = decodeUtf8Prefix(bytes, truncated).replace(/\r$/, '');
    this.#buffer = Buffer.alloc(0);
    return { text, truncated };
  }
}

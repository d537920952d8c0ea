import type { CapturedOutput } from './adapter.ts';

/**
 * Keeps the head of a byte stream up to a bound and counts the rest. A handler that
 * prints 10 MiB costs the server `maxBytes` of memory, not 10 MiB.
 */
export class BoundedCapture {
  readonly #maxBytes: number;
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  #total = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  get totalBytes(): number {
    return this.#total;
  }

  write(chunk: Buffer): void {
    this.#total += chunk.byteLength;
    const room = this.#maxBytes - this.#kept;
    if (room <= 0) return;
    const kept = chunk.byteLength <= room ? chunk : chunk.subarray(0, room);
    this.#chunks.push(kept);
    this.#kept += kept.byteLength;
  }

  /** The kept head as text, never ending inside a UTF-8 character. */
  result(): CapturedOutput {
    const head = Buffer.concat(this.#chunks);
    const truncated = this.#total > this.#kept;
    return { data: decodeUtf8Prefix(head, truncated), truncated, totalBytes: this.#total };
  }
}

/** Decodes bytes; when they were cut, drops a trailing partial UTF-8 sequence first. */
export function decodeUtf8Prefix(bytes: Buffer, cut: boolean): string {
  let end = bytes.byteLength;
  if (cut) {
    // Walk back at most 3 continuation bytes to the lead byte of the last character;
    // drop that character when its sequence is incomplete.
    let lead = end - 1;
    while (lead > 0 && end - lead < 4 && ((bytes[lead] ?? 0) & 0xc0) === 0x80) lead -= 1;
    const first = bytes[lead] ?? 0;
    const length = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1;
    if (lead >= 0 && lead + length > end) end = lead;
  }
  return bytes.subarray(0, end).toString('utf8');
}

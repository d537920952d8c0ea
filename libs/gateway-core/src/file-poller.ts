import { readFile } from 'node:fs/promises';

/**
 * Calls `onChange` with the files' contents whenever any of them changed, checking every
 * `intervalMs`. Polling content rather than fs.watch: a Kubernetes Secret volume changes
 * by swapping a symlinked directory, which watches on the files themselves miss. A read
 * that fails (a file replaced mid-way) is tried again at the next tick; `onChange`
 * throwing (a new cert that does not match its key yet) likewise.
 */
export class FilePoller {
  readonly #paths: readonly string[];
  readonly #onChange: (contents: string[]) => void;
  readonly #onError: (error: unknown) => void;
  #last: string[] | undefined;
  #timer: NodeJS.Timeout | undefined;
  #busy = false;

  constructor(paths: readonly string[], initial: string[], onChange: (contents: string[]) => void, onError: (error: unknown) => void) {
    this.#paths = paths;
    this.#last = initial;
    this.#onChange = onChange;
    this.#onError = onError;
  }

  start(intervalMs: number): void {
    this.#timer = setInterval(() => {
      void this.check();
    }, intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** One check now (tests call it to avoid waiting for a tick). */
  async check(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      const contents = await Promise.all(this.#paths.map((path) => readFile(path, 'utf8')));
      if (this.#last !== undefined && contents.every((content, i) => content === this.#last?.[i])) return;
      this.#onChange(contents);
      this.#last = contents;
    } catch (error) {
      this.#onError(error);
    } finally {
      this.#busy = false;
    }
  }
}

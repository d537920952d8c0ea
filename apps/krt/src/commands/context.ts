import type { KubeConfig } from '@kubernetes/client-node';
import type { RunApi } from '../kube.ts';

/** What a command writes to and reads from (the process's streams, or a test's). */
export interface CliIo {
  /** Bytes too: `krt artifacts --get ID -o -` writes the artifact as it is. */
  stdout: { write(chunk: string | Uint8Array): unknown };
  stderr: { write(text: string): unknown };
  stdin: AsyncIterable<Buffer | string>;
}

export interface CommandContext {
  kubeConfig: KubeConfig;
  runs: RunApi;
  io: CliIo;
  now: () => number;
}

import type { ArtifactAccess } from './artifact-endpoint.ts';
import type { ResumeInput } from './resume-files.ts';

/** One Execute call as the execution service takes it, converted from the gRPC request. */
export interface ExecuteRequest {
  readonly executionId: string;
  readonly runUid: string;
  readonly attempt: number;
  readonly workdir: string;
  readonly entrypoint: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number | undefined;
  readonly graceMs: number | undefined;
  /** Set: the execution gets the local artifacts endpoint and reports a ResultManifest. */
  readonly artifacts: ArtifactAccess | undefined;
  /** Set on a continuation attempt: the checkpoint and the response it starts from. */
  readonly resume?: ResumeInput | undefined;
}

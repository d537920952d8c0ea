// Every component of a system logs to a file under one directory, so that a test can read them all.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Logger } from 'pino';

export type RecordingLogger = Logger & { errors: { object: unknown; message: unknown }[] };

export interface LogFile {
  file: string;
  text: string;
}

/** A ControllerLogger-compatible pino logger writing JSON lines to a file; what it logs at error level is also kept. */
export function fileLogger(file: string, name: string): RecordingLogger {
  const errors: { object: unknown; message: unknown }[] = [];
  const logger = pino(
    {
      name,
      level: 'debug',
      redact: ['authorization', '*.authorization', 'token', '*.token', 'headers', '*.headers'],
      hooks: {
        logMethod(args, method, level) {
          if (level >= 50) errors.push({ object: args[0], message: args[1] });
          method.apply(this, args);
        },
      },
    },
    pino.destination({ dest: file, sync: true, mkdir: true }),
  );
  return Object.assign(logger, { errors });
}

/** Every `*.log` under `dir` (in-process components, the gateway, each Pod container): path and text. */
export async function readLogs(dir: string): Promise<LogFile[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  const files = entries.filter((entry) => entry.isFile() && entry.name.endsWith('.log')).map((entry) => join(entry.parentPath, entry.name));
  return Promise.all(files.map(async (file) => ({ file, text: await readFile(file, 'utf8') })));
}

/** The lines of `logs` that contain any of `needles`. */
export function linesContaining(logs: readonly LogFile[], needles: readonly string[]): { file: string; line: string }[] {
  return logs.flatMap(({ file, text }) =>
    text
      .split('\n')
      .filter((line) => needles.some((needle) => needle !== '' && line.includes(needle)))
      .map((line) => ({ file, line })),
  );
}

/** The last `tailLines` of each log, headed by its path relative to `dir`. */
export function logTails(dir: string, logs: readonly LogFile[], tailLines: number): string[] {
  return logs.flatMap(({ file, text }) => [`--- ${file.slice(dir.length + 1)}`, ...text.trimEnd().split('\n').slice(-tailLines)]);
}

import type { ManagerLogger } from '../manager.ts';

/** One line a reconciler logged. */
export interface LoggedLine {
  level: 'error' | 'info' | 'debug';
  message: string;
  fields: object;
}

/** A ControllerLogger (and ManagerLogger) for a reconciler's table test: keeps every line, prints none. */
export class RecordingLogger implements ManagerLogger {
  readonly lines: LoggedLine[] = [];

  error(fields: object, message: string): void {
    this.lines.push({ level: 'error', message, fields });
  }

  info(fields: object, message: string): void {
    this.lines.push({ level: 'info', message, fields });
  }

  debug(fields: object, message: string): void {
    this.lines.push({ level: 'debug', message, fields });
  }

  /** The messages logged at `level`, in order. */
  messages(level: LoggedLine['level']): string[] {
    return this.lines.filter((line) => line.level === level).map((line) => line.message);
  }
}

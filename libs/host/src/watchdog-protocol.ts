/** One line of JSON from the owner to its watchdog sidecar. */
export type WatchdogMessage =
  | { kind: 'watch-process-group'; pgid: number }
  | { kind: 'release-process-group'; pgid: number }
  | { kind: 'watch-directory'; path: string };

export function parseWatchdogMessage(line: string): WatchdogMessage {
  const value = JSON.parse(line) as { kind?: unknown; pgid?: unknown; path?: unknown };
  switch (value.kind) {
    case 'watch-process-group':
    case 'release-process-group':
      // Never 0 or 1: kill(-0) is our own group, kill(-1) is every process we may signal.
      if (typeof value.pgid === 'number' && Number.isInteger(value.pgid) && value.pgid > 1) {
        return { kind: value.kind, pgid: value.pgid };
      }
      break;
    case 'watch-directory':
      if (typeof value.path === 'string' && value.path.startsWith('/')) {
        return { kind: 'watch-directory', path: value.path };
      }
      break;
    default:
      break;
  }
  throw new Error(`invalid watchdog message: ${line}`);
}

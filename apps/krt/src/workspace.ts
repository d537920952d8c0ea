import { existsSync } from 'node:fs';
import { isSea } from 'node:sea';
import { fileURLToPath } from 'node:url';
import { usageError } from './exit-codes.ts';

/**
 * A TypeScript entry point of the kruntimes repository that krt runs as a Node.js child
 * process (`krt dev`, `krt run --local`). Only a krt run from a clone has it: the released
 * krt (one executable file, or the npm package) is the CLI alone, and says so.
 */
export function workspaceEntry(url: URL, command: string): string {
  const path = fileURLToPath(url);
  // In a single executable, process.execPath is krt itself, not a Node.js to run the entry with.
  if (isSea() || !existsSync(path)) {
    throw usageError(`${command} runs from a clone of the kruntimes repository (npx krt in it); this krt is the released CLI alone`);
  }
  return path;
}

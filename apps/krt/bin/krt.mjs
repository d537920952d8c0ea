#!/usr/bin/env node
// krt's launcher, the package's bin. Plain JavaScript, so that whatever Node.js runs it (the
// machine's own from the PATH, however old) gets this far; the CLI itself is TypeScript run
// by Node.js 24's type stripping. On Node.js 24 or later it runs the CLI in this process;
// on an older one it runs it on the Node.js 24 that `npm ci` installed with the workspace
// (the npm package `node`), or says in one line what is missing.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REQUIRED_MAJOR = 24;
const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));

if (Number(process.versions.node.split('.')[0]) >= REQUIRED_MAJOR) {
  await import(main);
} else {
  const pinned = pinnedNode();
  if (pinned === undefined) {
    process.stderr.write(
      `krt: needs Node.js ${REQUIRED_MAJOR} or later, and this is Node.js ${process.version} (${process.execPath}); ` +
        `run npm ci in the kruntimes workspace (it installs Node.js ${REQUIRED_MAJOR} as the npm package "node"), or put Node.js ${REQUIRED_MAJOR} first on the PATH\n`,
    );
    process.exit(1);
  }
  const child = spawn(pinned, [main, ...process.argv.slice(2)], { stdio: 'inherit' });
  // The CLI decides what a signal means (e.g. Ctrl-C during a wait): pass each one on.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    process.stderr.write(`krt: cannot start ${pinned}: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    // A CLI killed by a signal exits as the shell reports it: 128 + the signal's number.
    process.exit(code ?? 128 + (signal === null ? 0 : constants.signals[signal]));
  });
}

/** The `node` binary of the npm package `node` that the workspace installed, if there is one. */
function pinnedNode() {
  try {
    const binary = join(dirname(createRequire(import.meta.url).resolve('node/package.json')), 'bin', 'node');
    return existsSync(binary) ? binary : undefined;
  } catch {
    return undefined;
  }
}

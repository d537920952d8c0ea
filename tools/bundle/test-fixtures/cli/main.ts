// A CLI entry for release.test.ts: what it finds beside itself, and a dependency bundled in.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

const beside = fileURLToPath(new URL('./beside.txt', import.meta.url));
process.stdout.write(stringify({ args: process.argv.slice(2), beside, besideExists: existsSync(beside) }));

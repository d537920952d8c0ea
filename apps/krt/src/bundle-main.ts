// krt's entry point in its released builds (`nx run krt:release`: one executable file, and
// the npm package): a single CommonJS file, which has no top-level await (main.ts has).
import { runCli } from './cli.ts';

void runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }).then((code) => {
  process.exitCode = code;
});

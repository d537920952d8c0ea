#!/usr/bin/env node
// krt: wiring only (commands in ./commands, argument parsing in ./args.ts; see README).
import { enableCompileCache } from 'node:module';

// A CLI's start-up is its latency: keep compiled code across runs (Node's cache directory,
// off with NODE_DISABLE_COMPILE_CACHE=1). Imported after, so that the cache covers them.
enableCompileCache();
const { runCli } = await import('./cli.ts');

process.exitCode = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });

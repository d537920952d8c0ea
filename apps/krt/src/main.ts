#!/usr/bin/env node
// krt: wiring only (commands in ./commands, argument parsing in ./args.ts; see README).
import { runCli } from './cli.ts';

process.exitCode = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });

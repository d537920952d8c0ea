// The bundled build of one app (nx target `bundle` of every app; see bundle.ts):
//   node tools/bundle/src/main.ts apps/runtimed [--asset DIR]... [--out DIR]
// Default output: dist/bundle/<app>/main.mjs, run as `node dist/bundle/<app>/main.mjs`.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleApp } from './bundle.ts';

const { values, positionals } = parseArgs({
  options: { asset: { type: 'string', multiple: true }, out: { type: 'string' } },
  allowPositionals: true,
  strict: true,
});
const app = positionals[0];
if (app === undefined || positionals.length !== 1) {
  process.stderr.write('usage: main.ts APP_DIR [--asset DIR]... [--out DIR]\n');
  process.exit(2);
}
const result = await bundleApp({ app, outDir: values.out ?? join('dist', 'bundle', app), assets: values.asset ?? [] });
const total = result.files.reduce((sum, file) => sum + file.bytes, 0);
process.stdout.write(`${result.main}: ${String(result.files.length)} files, ${(total / 1024).toFixed(0)} KiB\n`);

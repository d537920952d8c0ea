// A CLI's release (nx target `release` of apps/krt; see release.ts):
//   node tools/bundle/src/release-main.ts apps/krt [--out DIR]
// Writes into DIR (default dist/release/<app>): <bin>.cjs (the bundle), <bin>-<platform>-<arch>
// (one executable file, Node.js included) and the npm package's tarball.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleCli, buildSingleExecutable, packNpmPackage } from './release.ts';

const { values, positionals } = parseArgs({ options: { out: { type: 'string' } }, allowPositionals: true, strict: true });
const app = positionals[0];
if (app === undefined || positionals.length !== 1) {
  process.stderr.write('usage: release-main.ts APP_DIR [--out DIR]\n');
  process.exit(2);
}
const workspace = JSON.parse(await readFile('package.json', 'utf8')) as { license: string; engines: { node: string } };
const manifest = JSON.parse(await readFile(join(app, 'package.json'), 'utf8')) as { bin: Record<string, string> };
const [command] = Object.keys(manifest.bin);
if (command === undefined) throw new Error(`${app}/package.json has no bin`);
const outDir = values.out ?? join('dist', 'release', app);
const kib = (bytes: number): string => `${(bytes / 1024).toFixed(0)} KiB`;

let started = Date.now();
const bundle = await bundleCli(join(app, 'src', 'bundle-main.ts'), join(outDir, `${command}.cjs`));
process.stdout.write(`${bundle.file}: ${kib(bundle.bytes)} (${String(Date.now() - started)} ms)\n`);

started = Date.now();
const executable = await buildSingleExecutable({
  script: bundle.file,
  outFile: join(outDir, `${command}-${process.platform}-${process.arch}`),
});
process.stdout.write(`${executable.file}: ${kib(executable.bytes)} (${String(Date.now() - started)} ms)\n`);

started = Date.now();
const requiredNodeMajor = Number(/\d+/.exec(workspace.engines.node)?.[0]);
const npm = await packNpmPackage({ app, bundle: bundle.file, outDir, license: workspace.license, requiredNodeMajor });
process.stdout.write(`${npm.tarball}: ${kib(npm.bytes)} (${String(Date.now() - started)} ms)\n`);

import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { inject } from 'postject';

const run = promisify(execFile);

/**
 * The bundled CLI is CommonJS: a single executable's main script must be (Node.js 24 runs
 * it as a CommonJS script). `import.meta.url` is then the file's own URL (the executable's
 * in a single executable), as it is in the workspace: what the CLI finds beside itself
 * there (the repository's entry points) is simply absent.
 */
const IMPORT_META_URL_BANNER = "var krtImportMetaUrl = require('node:url').pathToFileURL(__filename).href;";

/** Node.js's fuse in its binary that marks an injected single executable blob (Node.js docs, "Single executable applications"). */
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export interface CliBundle {
  file: string;
  bytes: number;
}

/**
 * A CLI's entry point as one self-contained CommonJS file: every library and dependency in
 * it, their licence comments at its end (the file is what a user downloads), minified as
 * the apps' bundles are (identifiers kept for readable stack traces).
 */
export async function bundleCli(entry: string, outFile: string): Promise<CliBundle> {
  const result = await build({
    entryPoints: [entry],
    outfile: outFile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    // As bundleApp: a package's ES build first (named exports of lazily imported CommonJS builds).
    mainFields: ['module', 'main'],
    target: 'node24',
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'eof',
    banner: { js: IMPORT_META_URL_BANNER },
    define: { 'import.meta.url': 'krtImportMetaUrl' },
    logLevel: 'silent',
  });
  const problems = [...result.errors, ...result.warnings];
  if (problems.length > 0) throw new Error(`esbuild: ${problems.map((p) => `${p.location?.file ?? ''}: ${p.text}`).join('; ')}`);
  return { file: outFile, bytes: (await stat(outFile)).size };
}

/**
 * One executable file: a copy of `node` (the binary that builds it, so the blob's code
 * cache matches) with `script` injected as its single executable application.
 */
export async function buildSingleExecutable(options: { script: string; outFile: string; node?: string }): Promise<CliBundle> {
  const node = options.node ?? process.execPath;
  const work = await mkdtemp(join(tmpdir(), 'krt-sea-'));
  try {
    const blob = join(work, 'sea.blob');
    const config = join(work, 'sea-config.json');
    await writeFile(
      config,
      JSON.stringify({ main: resolve(options.script), output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }),
    );
    await run(node, ['--experimental-sea-config', config], { cwd: work });
    await rm(options.outFile, { force: true });
    await copyFile(node, options.outFile);
    await chmod(options.outFile, 0o755);
    await inject(options.outFile, 'NODE_SEA_BLOB', await readFile(blob), { sentinelFuse: SEA_FUSE });
    return { file: options.outFile, bytes: (await stat(options.outFile)).size };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The fields of the app's package.json that its published package takes over. */
interface AppManifest {
  name: string;
  version: string;
  description?: string;
  bin: Record<string, string>;
}

/**
 * Its bin: plain JavaScript that any Node.js runs, so an old one says in one line what is
 * missing instead of failing on the first API it lacks; then the bundle, with Node's
 * compile cache for the next start.
 */
function launcher(command: string, requiredMajor: number, bundleFile: string): string {
  return `#!/usr/bin/env node
'use strict';
const major = Number(process.versions.node.split('.')[0]);
if (major < ${requiredMajor}) {
  process.stderr.write('${command}: needs Node.js ${requiredMajor} or later, and this is Node.js ' + process.version + ' (' + process.execPath + ')\\n');
  process.exit(1);
}
require('node:module').enableCompileCache();
require('../${bundleFile}');
`;
}

/**
 * The app as an npm package with no dependencies: the bundle and a launcher as its bin.
 * The workspace package stays private (its dependencies are the workspace's libraries);
 * this one is what `npm pack` makes a tarball of, installable anywhere.
 */
export async function packNpmPackage(options: {
  app: string;
  bundle: string;
  outDir: string;
  license: string;
  requiredNodeMajor: number;
}): Promise<{ dir: string; tarball: string; bytes: number }> {
  const manifest = JSON.parse(await readFile(join(options.app, 'package.json'), 'utf8')) as AppManifest;
  const dir = join(options.outDir, 'package');
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'bin'), { recursive: true });
  const bundleFile = basename(options.bundle);
  await copyFile(options.bundle, join(dir, bundleFile));
  await copyFile(join(options.app, 'README.md'), join(dir, 'README.md'));
  const bin: Record<string, string> = {};
  for (const command of Object.keys(manifest.bin)) {
    await writeFile(join(dir, 'bin', `${command}.cjs`), launcher(command, options.requiredNodeMajor, bundleFile), { mode: 0o755 });
    bin[command] = `bin/${command}.cjs`;
  }
  const published = {
    name: manifest.name,
    version: manifest.version,
    ...(manifest.description === undefined ? {} : { description: manifest.description }),
    license: options.license,
    engines: { node: `>=${options.requiredNodeMajor}` },
    bin,
    files: ['bin', bundleFile],
  };
  await writeFile(join(dir, 'package.json'), `${JSON.stringify(published, null, 2)}\n`);
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', resolve(options.outDir)], { cwd: dir });
  const [packed] = JSON.parse(stdout) as { filename: string; size: number }[];
  if (packed === undefined) throw new Error(`npm pack wrote nothing: ${stdout}`);
  return { dir, tarball: join(options.outDir, packed.filename), bytes: packed.size };
}

import { cp, rm, stat } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { build } from 'esbuild';

export interface BundleOptions {
  /** The app's directory (`apps/runtimed`): its entry point is `src/main.ts`. */
  app: string;
  /** Where `main.mjs` (and its lazily imported chunks) are written; emptied first. */
  outDir: string;
  /**
   * Directories under the app's `src/` that its code finds beside itself at run time
   * (`import.meta.dirname`: the Python shim and helper modules, the bash helper commands),
   * copied next to `main.mjs`, where `import.meta.dirname` then points.
   */
  assets?: readonly string[];
}

export interface BundleResult {
  main: string;
  /** Every file written, relative to `outDir`, with its size in bytes. */
  files: { path: string; bytes: number }[];
}

/**
 * CommonJS dependencies call `require` for Node built-ins (and optional packages inside
 * try/catch); an ES module has none, so every output file gets one of its own.
 */
const REQUIRE_BANNER =
  "import { createRequire as krtCreateRequire } from 'node:module'; const require = krtCreateRequire(import.meta.url);";

/**
 * The bundled build of one app: a single ES module with every library and dependency in
 * it, so that a process starts without resolving ~2,000 files and without Node's type
 * stripping (which alone costs ~18 MiB RSS). `import()`s stay lazy (code splitting): what
 * an app loads only when configured (the tracing exporter, the S3 client) is a chunk read
 * only then. Whitespace and syntax are minified, identifiers are not: stack traces in the
 * logs keep their function names. Licence comments go to `*.LEGAL.txt` beside the code.
 */
export async function bundleApp(options: BundleOptions): Promise<BundleResult> {
  const app = resolve(options.app);
  const outDir = resolve(options.outDir);
  await rm(outDir, { recursive: true, force: true });
  const result = await build({
    entryPoints: { main: join(app, 'src', 'main.ts') },
    outdir: outDir,
    outExtension: { '.js': '.mjs' },
    // Chunks beside main.mjs: `import.meta.dirname` is the same directory whichever file a module lands in.
    chunkNames: '[name]-[hash]',
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    // A package's ES build first. esbuild gives a lazily imported CommonJS build (`import()` of
    // a package without an ES entry) only a default export, where Node also finds its named
    // ones: @peculiar/x509's CommonJS build left x509.X509Certificate undefined in the bundle
    // (the controller-manager on the real node could issue no certificate).
    mainFields: ['module', 'main'],
    target: 'node24',
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'linked',
    banner: { js: REQUIRE_BANNER },
    metafile: true,
    logLevel: 'silent',
  });
  if (result.errors.length > 0) throw new Error(`esbuild failed for ${options.app}: ${result.errors.map((e) => e.text).join('; ')}`);
  for (const asset of options.assets ?? []) {
    await cp(join(app, 'src', asset), join(outDir, asset), {
      recursive: true,
      // Tests and Python bytecode stay behind.
      filter: (source) => !source.endsWith('.test.ts') && !source.includes('__pycache__'),
    });
  }
  const files = await Promise.all(
    Object.keys(result.metafile.outputs).map(async (path) => ({
      path: relative(outDir, resolve(path)),
      bytes: (await stat(resolve(path))).size,
    })),
  );
  return { main: join(outDir, 'main.mjs'), files };
}

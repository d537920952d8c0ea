import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleApp } from './bundle.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Ended {
  code: number | null;
  output: string;
}

/**
 * Runs a bundle with an empty environment; `until` (a line of its log) ends it with SIGTERM.
 * Bounded: killed after 30 s.
 */
function run(main: string, args: readonly string[], until?: string): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const collect = (chunk: Buffer): void => {
      output += chunk.toString();
      if (until !== undefined && output.includes(until)) child.kill('SIGTERM');
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('bundleApp', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'krt-bundle-test-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('bundles runtimed into one module that loads every dependency and starts (refusing an empty configuration)', async () => {
    const result = await bundleApp({ app: join(ROOT, 'apps/runtimed'), outDir: join(dir, 'runtimed') });
    expect(result.files.map((file) => file.path)).toContain('main.mjs');
    const ended = await run(result.main, []);
    expect(ended.output).toContain('invalid runtimed configuration: POD_NAME is required');
    expect(ended.output).not.toContain('ERR_MODULE_NOT_FOUND');
    expect(ended.code).toBe(1);
  });

  it('gives a lazily imported package its named exports, as Node does (its ES build: the CommonJS one had only a default)', async () => {
    const result = await bundleApp({ app: join(ROOT, 'tools/bundle/test-fixtures/lazy-commonjs'), outDir: join(dir, 'lazy-commonjs') });
    const ended = await run(result.main, []);
    expect(ended.output).toContain('-----BEGIN CERTIFICATE-----');
    expect(ended.code).toBe(0);
  });

  it('keeps the tracing SDK out of the main module: a chunk imported only when an OTLP endpoint is set', async () => {
    const result = await bundleApp({ app: join(ROOT, 'apps/runtime-server-python'), outDir: join(dir, 'python-chunks') });
    const texts = await Promise.all(
      result.files
        .filter((file) => file.path.endsWith('.mjs'))
        .map(async (file) => ({ path: file.path, text: await readFile(join(dir, 'python-chunks', file.path), 'utf8') })),
    );
    const sdk = texts.filter(({ text }) => text.includes('BatchSpanProcessorBase')).map(({ path }) => path);
    expect(sdk.length).toBe(1);
    expect(sdk).not.toContain('main.mjs');
  });

  it('copies the assets an app finds beside itself, and the Python Runtime Server serves from its bundle', async () => {
    const result = await bundleApp({
      app: join(ROOT, 'apps/runtime-server-python'),
      outDir: join(dir, 'python'),
      assets: ['pylib', 'shim'],
    });
    expect(existsSync(join(dir, 'python', 'shim', 'krt_worker.py'))).toBe(true);
    expect((await readdir(join(dir, 'python', 'pylib'))).filter((name) => name.endsWith('.py')).length).toBeGreaterThan(0);
    const ended = await run(result.main, ['--listen', '127.0.0.1:0'], 'runtime server listening');
    expect(ended.output).toContain('"msg":"runtime server stopped"');
    expect(ended.code).toBe(0);
  });
});

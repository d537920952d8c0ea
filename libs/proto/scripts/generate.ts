/**
 * Generates libs/proto/src/generated from proto/ with buf and ts-proto, or with
 * `--check` generates into a temporary directory and fails when the committed code
 * differs (a stale generated tree must never reach main).
 *
 * Runs from the workspace root: `node libs/proto/scripts/generate.ts [--check]`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const projectDir = join(import.meta.dirname, '..');
const workspaceRoot = join(projectDir, '..', '..');
const generatedRel = join('src', 'generated');

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

/**
 * ts-proto applies `importSuffix` to package imports too. `.ts` is right for the
 * generated files (Node runs them by type stripping) but the protobufjs runtime is
 * JavaScript: point that import back at its real file.
 */
function fixRuntimeImports(dir: string): void {
  for (const file of listFiles(dir)) {
    const path = join(dir, file);
    const source = readFileSync(path, 'utf8');
    const fixed = source.replaceAll('"protobufjs/minimal.ts"', '"protobufjs/minimal.js"');
    if (fixed !== source) writeFileSync(path, fixed);
  }
}

function generate(outputBase: string): void {
  rmSync(join(outputBase, generatedRel), { recursive: true, force: true });
  execFileSync(
    join(workspaceRoot, 'node_modules', '.bin', 'buf'),
    ['generate', 'proto', '--template', join('libs', 'proto', 'buf.gen.yaml'), '--output', outputBase],
    { cwd: workspaceRoot, stdio: 'inherit' },
  );
  fixRuntimeImports(join(outputBase, generatedRel));
}

function check(): number {
  execFileSync(join(workspaceRoot, 'node_modules', '.bin', 'buf'), ['lint', 'proto'], {
    cwd: workspaceRoot,
    stdio: 'inherit',
  });
  const scratch = mkdtempSync(join(tmpdir(), 'kruntimes-proto-'));
  try {
    generate(scratch);
    const fresh = join(scratch, generatedRel);
    const committed = join(projectDir, generatedRel);
    const freshFiles = listFiles(fresh);
    const committedFiles = listFiles(committed);
    const stale = [
      ...freshFiles.filter((f) => !committedFiles.includes(f)).map((f) => `missing: ${f}`),
      ...committedFiles.filter((f) => !freshFiles.includes(f)).map((f) => `not generated: ${f}`),
      ...freshFiles
        .filter((f) => committedFiles.includes(f))
        .filter((f) => readFileSync(join(fresh, f), 'utf8') !== readFileSync(join(committed, f), 'utf8'))
        .map((f) => `differs: ${f}`),
    ];
    if (stale.length > 0) {
      console.error(`libs/proto/src/generated is stale; run \`npx nx run proto:generate\`:\n  ${stale.join('\n  ')}`);
      return 1;
    }
    console.log(`libs/proto/src/generated is up to date (${freshFiles.length} files)`);
    return 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv.includes('--check')) {
  process.exitCode = check();
} else {
  generate(projectDir);
}

import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { importLoops } from './import-loops.ts';

const workspaceRoot = join(import.meta.dirname, '..', '..', '..');

describe('import loops', () => {
  it('no file of the workspace imports itself around a circle, not even for a type', () => {
    const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', '*.ts'], {
      cwd: workspaceRoot,
      encoding: 'utf8',
    })
      .split('\0')
      .filter((file) => file !== '' && !file.startsWith('libs/proto/src/generated/'));
    expect(files.length).toBeGreaterThan(100);
    expect(importLoops(workspaceRoot, files)).toEqual([]);
  });

  it('finds a type-only loop through a re-export, and leaves a chain alone', () => {
    const root = mkdtempSync(join(tmpdir(), 'import-loops-'));
    const write = (file: string, text: string) => {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), text);
    };
    try {
      write('a.ts', "import type { B } from './b.ts';\nexport type A = B;\n");
      write('b.ts', "export type { C as B } from './sub/c.ts';\n");
      write('sub/c.ts', "import type { A } from '../a.ts';\nexport type C = A[];\n");
      write('d.ts', "import { x } from './e.ts';\nexport const d = x;\n");
      write('e.ts', 'export const x = 1;\n');
      expect(importLoops(root, ['a.ts', 'b.ts', 'sub/c.ts', 'd.ts', 'e.ts'])).toEqual([['a.ts', 'b.ts', 'sub/c.ts']]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

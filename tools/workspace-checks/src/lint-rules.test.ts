import { join } from 'node:path';
import { ESLint } from 'eslint';

// The workspace's own lint rules are part of its architecture: these tests lint a
// file that breaks each rule, at a real path inside a real project, and expect the error.
const workspaceRoot = join(import.meta.dirname, '..', '..', '..');
const eslint = new ESLint({ cwd: workspaceRoot });

async function lintAs(relativePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(workspaceRoot, relativePath) });
  return (result?.messages ?? []).map((message) => `${message.ruleId ?? 'fatal'}: ${message.message}`);
}

describe('module boundaries', () => {
  it.each(['@kubernetes/client-node', 'helmet', 'nice-grpc', 'pino'])('a domain lib may not import %s', async (ioPackage) => {
    const messages = await lintAs('libs/run-state/src/transition.ts', `import '${ioPackage}';\nexport const x = 1;\n`);
    expect(messages).toContainEqual(expect.stringMatching(new RegExp(`^@nx/enforce-module-boundaries: .*type:domain.*${ioPackage}`)));
  });

  it.each(['node:fs', 'node:fs/promises', 'fs', 'node:net', 'node:http', 'node:https', 'node:http2', 'node:child_process'])(
    'a domain lib may not import %s',
    async (ioModule) => {
      const messages = await lintAs('libs/run-state/src/transition.ts', `import '${ioModule}';\nexport const x = 1;\n`);
      expect(messages).toContainEqual(expect.stringMatching(new RegExp(`^@typescript-eslint/no-restricted-imports: '${ioModule}'`)));
    },
  );

  it('a domain lib may import a type from a Node I/O module, and its tests may read files', async () => {
    const typeOnly = await lintAs(
      'libs/run-state/src/transition.ts',
      "import type { ChildProcess } from 'node:child_process';\nexport type X = ChildProcess;\n",
    );
    const inTest = await lintAs(
      'libs/run-state/src/transition.test.ts',
      "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n",
    );
    expect([...typeOnly, ...inTest].filter((m) => m.startsWith('@typescript-eslint/no-restricted-imports'))).toEqual([]);
  });

  it('the libs’ test doubles may be imported by tests only', async () => {
    const code = "import { FakeCache } from '@kruntimes/controller-runtime/testing';\nexport const x = FakeCache;\n";
    const inProduction = await lintAs('libs/controller-manager-core/src/manager.ts', code);
    const inTest = await lintAs('libs/controller-manager-core/src/manager.test.ts', code);
    expect(inProduction).toContainEqual(expect.stringMatching(/^no-restricted-imports: .*Test doubles are for tests/));
    expect(inTest.filter((m) => m.startsWith('no-restricted-imports'))).toEqual([]);
  });

  it('a runtime lib may import Node I/O modules', async () => {
    const messages = await lintAs('libs/host/src/paths.ts', "import { access } from 'node:fs/promises';\nexport const x = access;\n");
    expect(messages.filter((m) => m.startsWith('@typescript-eslint/no-restricted-imports'))).toEqual([]);
  });

  it('a domain lib may import another domain lib', async () => {
    const messages = await lintAs(
      'libs/run-state/src/transition.ts',
      `import { BOUNDS } from '@kruntimes/api';\nexport const x = BOUNDS.messageBytes;\n`,
    );
    expect(messages.filter((m) => m.startsWith('@nx/enforce-module-boundaries'))).toEqual([]);
  });
});

describe('exhaustive switches', () => {
  it('a switch over the phase that misses a phase is an error', async () => {
    const code = [
      "import type { RunPhase } from '@kruntimes/api';",
      'export function f(phase: RunPhase): number {',
      '  switch (phase) {',
      "    case 'Pending':",
      '      return 1;',
      '  }',
      '  return 0;',
      '}',
      '',
    ].join('\n');
    const messages = await lintAs('libs/run-state/src/classification.ts', code);
    expect(messages).toContainEqual(expect.stringMatching(/^@typescript-eslint\/switch-exhaustiveness-check/));
  });
});

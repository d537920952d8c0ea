import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';
import unicorn from 'eslint-plugin-unicorn';

// Packages that perform I/O. Domain and util libs stay pure: they are the code that
// every service shares, and they are tested without a cluster, a socket or a logger.
const ioPackages = [
  '@kubernetes/client-node',
  'helmet',
  'nice-grpc',
  'nice-grpc-common',
  '@grpc/grpc-js',
  'pino',
  '@opentelemetry/*',
  'undici',
];

const layers = {
  'type:app': ['type:runtime', 'type:data-access', 'type:domain', 'type:util', 'type:generated'],
  'type:tool': ['type:runtime', 'type:data-access', 'type:domain', 'type:util', 'type:generated', 'type:testing', 'type:tool'],
  'type:runtime': ['type:runtime', 'type:data-access', 'type:domain', 'type:util', 'type:generated'],
  'type:data-access': ['type:data-access', 'type:domain', 'type:util', 'type:generated'],
  'type:domain': ['type:domain', 'type:util'],
  'type:util': ['type:util'],
  'type:generated': [],
  'type:testing': ['type:testing', 'type:runtime', 'type:data-access', 'type:domain', 'type:util', 'type:generated'],
  // The full system of the end-to-end tests: the services and Runtime Pods through the local node agent (a tool).
  'type:e2e': ['type:e2e', 'type:testing', 'type:tool', 'type:runtime', 'type:data-access', 'type:domain', 'type:util', 'type:generated'],
  // The benchmarks (tools/benchmarks): they start a control plane and the full system like the end-to-end tests.
  'type:bench': ['type:e2e', 'type:testing', 'type:tool', 'type:runtime', 'type:data-access', 'type:domain', 'type:util', 'type:generated'],
};
const pureTags = new Set(['type:domain', 'type:util']);

// Node's own I/O modules, banned from the same libs. nx's bannedExternalImports does not
// see Node built-ins, so these go through no-restricted-imports on the pure libs' sources
// (their tests and generator scripts may read and write files). Type-only imports are allowed.
const ioNodeModules = ['fs', 'fs/promises', 'net', 'tls', 'dgram', 'http', 'https', 'http2', 'child_process'];
const pureLibRoots = readdirSync(join(import.meta.dirname, 'libs')).flatMap((name) => {
  const project = JSON.parse(readFileSync(join(import.meta.dirname, 'libs', name, 'project.json'), 'utf8'));
  return (project.tags ?? []).some((tag) => pureTags.has(tag)) ? [`libs/${name}`] : [];
});

/** Which tags each layer may import (`extraTags` added to every layer, e.g. for tests). */
function moduleBoundaries(extraTags) {
  return {
    enforceBuildableLibDependency: false,
    allow: [],
    banTransitiveDependencies: true,
    depConstraints: Object.entries(layers).map(([sourceTag, allowed]) => ({
      sourceTag,
      onlyDependOnLibsWithTags: [...allowed, ...extraTags],
      ...(pureTags.has(sourceTag) ? { bannedExternalImports: ioPackages } : {}),
    })),
  };
}

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '**/coverage/**', '.nx/**', 'tmp/**', 'libs/proto/src/generated/**'] },
  ...nx.configs['flat/base'],
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.strictTypeChecked, ...tseslint.configs.stylisticTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { unicorn },
    rules: {
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: false, requireDefaultForNonUnion: true },
      ],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      '@typescript-eslint/no-floating-promises': 'error',
      // @kubernetes/client-node models are plain-data classes (public fields plus a static
      // attribute map) that its API methods accept as object literals. Caveat kept in mind
      // instead: a YAML-parsed object sent through a typed API loses `x-kubernetes-*` keys.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
      'unicorn/filename-case': ['error', { case: 'kebabCase' }],
      '@nx/enforce-module-boundaries': ['error', moduleBoundaries([])],
    },
  },
  {
    // Tests of any project may use the test harness and the full system.
    files: ['**/*.test.ts', '**/test/**/*.ts'],
    rules: {
      '@nx/enforce-module-boundaries': ['error', moduleBoundaries(['type:testing', 'type:e2e'])],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // The libs' test doubles (`@kruntimes/<lib>/testing`) are for tests: a production import
    // would run a reconciler against an in-memory API server.
    files: ['**/*.ts'],
    ignores: ['**/*.test.ts', '**/test/**', '**/src/testing/**', 'libs/testing/**', 'e2e/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@kruntimes/*/testing'], message: 'Test doubles are for tests (*.test.ts, test/) only.' }] },
      ],
    },
  },
  {
    files: pureLibRoots.map((root) => `${root}/src/**/*.ts`),
    ignores: ['**/*.test.ts', '**/test/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: ioNodeModules.flatMap((name) =>
            [`node:${name}`, name].map((specifier) => ({
              name: specifier,
              message: 'Domain and util libs do no I/O: move it to a runtime or data-access lib.',
              allowTypeImports: true,
            })),
          ),
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);

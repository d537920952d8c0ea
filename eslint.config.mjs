import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';
import unicorn from 'eslint-plugin-unicorn';

// Packages that perform I/O. Domain and util libs stay pure: they are the code that
// every service shares, and they are tested without a cluster, a socket or a logger.
const ioPackages = [
  '@kubernetes/client-node',
  'express',
  'helmet',
  'nice-grpc',
  'nice-grpc-common',
  '@grpc/grpc-js',
  'pino',
  '@opentelemetry/*',
  'undici',
];

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
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      '@typescript-eslint/no-floating-promises': 'error',
      'unicorn/filename-case': ['error', { case: 'kebabCase' }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          banTransitiveDependencies: true,
          depConstraints: [
            {
              sourceTag: 'type:app',
              onlyDependOnLibsWithTags: ['type:runtime', 'type:data-access', 'type:domain', 'type:util', 'type:generated'],
            },
            {
              sourceTag: 'type:tool',
              onlyDependOnLibsWithTags: ['type:runtime', 'type:data-access', 'type:domain', 'type:util', 'type:generated', 'type:testing'],
            },
            {
              sourceTag: 'type:runtime',
              onlyDependOnLibsWithTags: ['type:runtime', 'type:data-access', 'type:domain', 'type:util', 'type:generated'],
            },
            {
              sourceTag: 'type:data-access',
              onlyDependOnLibsWithTags: ['type:data-access', 'type:domain', 'type:util', 'type:generated'],
            },
            {
              sourceTag: 'type:domain',
              onlyDependOnLibsWithTags: ['type:domain', 'type:util'],
              bannedExternalImports: ioPackages,
            },
            {
              sourceTag: 'type:util',
              onlyDependOnLibsWithTags: ['type:util'],
              bannedExternalImports: ioPackages,
            },
            { sourceTag: 'type:generated', onlyDependOnLibsWithTags: [] },
            {
              sourceTag: 'type:testing',
              onlyDependOnLibsWithTags: ['type:testing', 'type:runtime', 'type:data-access', 'type:domain', 'type:util', 'type:generated'],
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.test.ts', '**/test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);

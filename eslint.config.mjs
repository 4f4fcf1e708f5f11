// ESLint (typescript-eslint's recommended rules); formatting is Prettier's job, so its rules are off.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

export default tseslint.config(
  { ignores: ['node_modules/', '.tools/', '.data/', '.exp/', 'dist/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    // Only the few CommonJS scripts (jest.config.js, scripts/) need Node globals; TypeScript checks the rest.
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', require: 'readonly', module: 'writable', __dirname: 'readonly' },
    },
    rules: {
      // Test doubles and SDK seams cast through `any` on purpose; each cast is local and visible.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Workflow modules are loaded once and shared by every workflow in the worker's V8 context
    // (src/temporal/workflow-bundle.ts, `preloadModules`): module-level state would leak between them.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: ':matches(Program, Program > ExportNamedDeclaration) > VariableDeclaration[kind!="const"]',
          message: 'no module-level let/var in workflows/: modules are shared by all workflows',
        },
        {
          selector: ':matches(Program, Program > ExportNamedDeclaration) > VariableDeclaration > VariableDeclarator > NewExpression.init',
          message: 'no module-level objects built with `new` in workflows/: modules are shared by all workflows',
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);

// The VS Code client's lint: typescript-eslint's strict type-checked rules over the sources
// and the unit tests, ESLint's recommended rules over the end-to-end tests (plain JavaScript
// run by node, some of it inside the page). Formatting is prettier's (the repository's
// .prettierrc.json).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['out/', 'node_modules/', 'test-fixtures/'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // numbers in CSS values and ids; what a user reads comes worded from the server
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      // VS Code's API takes any `{ dispose() }` as a disposable (event emitters, items), and
      // so do the lists of them here
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
    },
  },
  {
    // the tests read the server's payloads as untyped JSON and hold them against what the
    // client made of them
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['**/*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        // inside page.evaluate: the page's own
        document: 'readonly',
        getComputedStyle: 'readonly',
      },
    },
  },
);

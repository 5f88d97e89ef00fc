// The VS Code client's lint: typescript-eslint's strict type-checked rules over the sources
// and the unit tests, ESLint's recommended rules over the end-to-end tests (plain JavaScript
// run by node, some of it inside the page). Formatting is prettier's (the repository's
// .prettierrc.json).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import { sourceRules, testRules } from '../eslint.rules.mjs';

export default defineConfig(
  { ignores: ['out/', 'node_modules/', 'test-fixtures/'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      ...sourceRules,
      // VS Code's API takes any `{ dispose() }` as a disposable (event emitters, items), and
      // so do the lists of them here
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
    },
  },
  { files: ['test/**/*.ts'], rules: testRules },
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

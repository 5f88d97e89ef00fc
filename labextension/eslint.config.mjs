// The JupyterLab client's lint: typescript-eslint's strict type-checked rules over the
// sources and the unit tests (the UI tests are Python, under tests/jupyter). Formatting is
// prettier's (the repository's .prettierrc.json).
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import { sourceRules, testRules } from '../eslint.rules.mjs';

export default defineConfig(
  { ignores: ['lib/', 'node_modules/', 'style/', '*.cjs', '*.mjs', '*.mts'] },
  {
    files: ['src/**/*.ts', 'tests/**/*.ts'],
    extends: [tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: sourceRules,
  },
  { files: ['tests/**/*.ts'], rules: testRules },
);

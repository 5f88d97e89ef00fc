// Rule settings both clients' eslint configurations use over typescript-eslint's strict
// type-checked set (extension/eslint.config.mjs, labextension/eslint.config.mjs). Plain
// data: each client resolves the plugins from its own packages.

/** For the sources and the tests. */
export const sourceRules = {
  // numbers in CSS values, SVG points and ids; what a user reads comes worded from the server
  '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
};

/** For the tests alone: they read the server's payloads as untyped JSON and hold them
 * against what the client made of them. */
export const testRules = {
  '@typescript-eslint/no-explicit-any': 'off',
  '@typescript-eslint/no-unsafe-argument': 'off',
  '@typescript-eslint/no-unsafe-assignment': 'off',
  '@typescript-eslint/no-unsafe-call': 'off',
  '@typescript-eslint/no-unsafe-member-access': 'off',
  '@typescript-eslint/no-unsafe-return': 'off',
  '@typescript-eslint/no-non-null-assertion': 'off',
};

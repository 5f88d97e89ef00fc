import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    environment: 'node',
    // the payloads the tests draw, written by the Python side before they run
    globalSetup: ['tests/payloads.setup.ts'],
  },
});

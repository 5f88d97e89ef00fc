import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    environment: 'node',
    // the payloads the tests draw, written by the Python side before they run
    globalSetup: ['test/unit/payloads.setup.ts'],
  },
});

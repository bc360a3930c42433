import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    // Integration tests start real servers on port 0; forks isolate native sqlite handles.
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Every /v1 and /admin answer the tests receive is checked against the OpenAPI document.
    setupFiles: ['test/setup/openapi-contract.ts'],
  },
});

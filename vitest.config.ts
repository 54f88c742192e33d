import { defineConfig } from 'vitest/config';

/**
 * The suites that drive Oncely's Middy middlewares end to end, run a second time against the
 * oldest Middy major the package supports (its peer range `^6.4.5 || ^7.0.0`; the repository
 * develops on 7). A subset, to keep `npm test` short: the consumer's `fifoBatch` (its `after`
 * hook and the batch response) and the idempotency middleware (`before`, `after`, `onError`, and
 * the early return of a completed request).
 */
const MIDDY_FLOOR_SUITES = [
  'test/consumer/fifo-batch.test.ts',
  'test/idempotency/middleware.test.ts',
  'test/consumer/middy-major.test.ts',
];

/** What every project runs with. */
const SHARED = {
  env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  testTimeout: 30_000,
  hookTimeout: 60_000,
};

export default defineConfig({
  test: {
    // Here only, not in the projects: the emulators start once per run, for every project.
    globalSetup: ['test/support/global-setup.ts'],
    projects: [
      {
        test: {
          ...SHARED,
          name: 'oncely',
          sequence: { groupOrder: 0 },
          include: ['test/**/*.test.ts'],
          // The deploy test needs moto and runs on its own: `npm run test:deploy`.
          exclude: ['test/deploy/**', 'node_modules/**'],
        },
      },
      {
        // `@middy/core-floor` is npm's alias of @middy/core 6.4.5 (devDependencies).
        resolve: { alias: [{ find: /^@middy\/core$/, replacement: '@middy/core-floor' }] },
        test: {
          ...SHARED,
          name: 'middy-floor',
          include: MIDDY_FLOOR_SUITES,
          // After the main project, not beside it: the suite's 1-second visibility timeouts are
          // sensitive to load, and its second copy would double the load of its first.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});

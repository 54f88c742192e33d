import { defineConfig } from 'vitest/config';

/**
 * The fast tier, `npm run test:unit`: the files that need no emulator, sandbox or install, the loop
 * a developer runs after each edit. They start nothing (test/support/fast-tier-guard.ts makes one
 * that tries fail, saying so), so the run starts no emulator either. A file not listed here runs
 * in the whole suite only; list a new file here when it needs none of them.
 */
const FAST_TESTS = [
  'test/bench/cost.test.ts',
  'test/bench/cpu-profile.test.ts',
  'test/bench/valkey-cost.test.ts',
  'test/chaos/acceptance-order.test.ts',
  'test/chaos/chaos-report.test.ts',
  'test/chaos/dead-letter-causes.test.ts',
  'test/chaos/fault-plans.test.ts',
  'test/chaos/fingerprint.test.ts',
  'test/chaos/hash.test.ts',
  'test/chaos/outbox-logs.test.ts',
  'test/chaos/pipeline-faults.test.ts',
  'test/chaos/test-clock.test.ts',
  'test/cli/console-activity.test.ts',
  'test/cli/console-command-line.test.ts',
  'test/cli/console-page.test.ts',
  'test/cli/history-story.test.ts',
  'test/consumer/deadline.test.ts',
  'test/consumer/fifo-groups.test.ts',
  'test/consumer/middy-major.test.ts',
  'test/consumer/namespaces.test.ts',
  'test/consumer/retry-delay.test.ts',
  'test/consumer/store-failure.test.ts',
  'test/conventions/error-names.test.ts',
  'test/conventions/unknown-option-keys.test.ts',
  'test/docs/design-references.test.ts',
  'test/docs/docs-match-code.test.ts',
  'test/envelope.test.ts',
  'test/idempotency/completed-cache.test.ts',
  'test/idempotency/keys.test.ts',
  'test/outbox/environment.test.ts',
  'test/package/api-report.test.ts',
  'test/package/missing-toolchain.test.ts',
  'test/publisher/batching.test.ts',
  'test/publisher/environment.test.ts',
  'test/publisher/errors.test.ts',
  'test/publisher/ordered-sender.test.ts',
  'test/publisher/trace-context.test.ts',
  'test/runtime/backoff.test.ts',
  'test/runtime/tracing.test.ts',
  'test/runtime/transient-aws-error.test.ts',
  'test/sandbox/async-invocation.test.ts',
  'test/sandbox/cloudwatch-api.test.ts',
  'test/sandbox/event-filter.test.ts',
  'test/sandbox/function-concurrency.test.ts',
  'test/sandbox/function-log.test.ts',
  'test/sandbox/schedules.test.ts',
  'test/sandbox/stream-shards.test.ts',
  'test/sandbox/trace-collector.test.ts',
  'test/shop/environment.test.ts',
  'test/shop/shop-settings.test.ts',
  'test/soak/soak-parts.test.ts',
  'test/stack/as-aws-runs-it.test.ts',
  'test/stack/cloudformation-validation.test.ts',
  'test/stack/grants.test.ts',
  'test/stack/managed-instances.test.ts',
  'test/stack/outbox.test.ts',
  'test/stack/pipeline-outputs.test.ts',
  'test/stack/pipeline.test.ts',
  'test/stack/sent-commands.test.ts',
  'test/stack/standard-pipeline.test.ts',
  'test/stack/unknown-props.test.ts',
];

/**
 * The suites that drive Oncely's Middy middlewares end to end, run a second time against the
 * oldest Middy major the package supports (its peer range `^6.4.5 || ^7.0.0`; the repository
 * develops on 7). A subset, to keep `npm test` short: the consumer's `fifoBatch` (its `after`
 * hook and the batch response) and the idempotency middleware (`before`, `after`, `onError`, and
 * the early return of a completed request).
 */
/**
 * The files that keep the machine busy for a minute or more (a whole shop under faults, a user's
 * project installed and run, the benchmarks): they run after the others, one at a time, so that
 * on a machine already busy with other work they do not also share it with another test file.
 */
const ALONE_TESTS = [
  'test/soak/soak.test.ts',
  'test/chaos/pipeline.test.ts',
  'test/outbox/sandbox-outbox.test.ts',
  'test/package/scratch-project.test.ts',
  'test/bench/benchmarks.test.ts',
];

const MIDDY_FLOOR_SUITES = [
  'test/consumer/fifo-batch.test.ts',
  'test/idempotency/middleware.test.ts',
  'test/consumer/middy-major.test.ts',
];

/**
 * What every project runs with. The bounds are for a test that fails: a passing test ends when its
 * condition holds, so they are wide enough for a machine busy with other work.
 */
const SHARED = {
  env: {
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    // aws-cdk-lib checks each synthesised template against CloudFormation's schemas in WebAssembly
    // (about 4 s a synthesis, warnings unless an app asks for errors): `npm run synth`, the deploy
    // test and test/stack/cloudformation-validation.test.ts keep it; other syntheses skip it.
    CDK_VALIDATION: 'false',
  },
  testTimeout: 120_000,
  hookTimeout: 240_000,
};

/** DynamoDB Local and the SQS emulator, started once for the run, only when a project that needs them runs. */
const EMULATORS = ['test/support/global-setup.ts'];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...SHARED,
          name: 'unit',
          include: FAST_TESTS,
          // Two files at once (Vitest's default on 2 cores is one): in the whole suite a file of
          // the oncely project spends about half its time waiting on emulators, functions and
          // queues. A group's projects run with one worker count: this one's and oncely's.
          maxWorkers: 2,
          // The files share their workers' module graph: each worker loads aws-cdk-lib and the SDK
          // once, not once per file (most of the tier's time). Each file still owns its state.
          isolate: false,
          setupFiles: ['test/support/fast-tier-guard.ts'],
        },
      },
      {
        test: {
          ...SHARED,
          name: 'oncely',
          sequence: { groupOrder: 0 },
          maxWorkers: 2,
          include: ['test/**/*.test.ts'],
          // The deploy test needs moto and runs on its own: `npm run test:deploy`.
          exclude: [...FAST_TESTS, ...ALONE_TESTS, 'test/deploy/**', 'node_modules/**'],
          globalSetup: EMULATORS,
        },
      },
      {
        test: {
          ...SHARED,
          name: 'alone',
          sequence: { groupOrder: 1 },
          maxWorkers: 1,
          include: ALONE_TESTS,
          globalSetup: EMULATORS,
        },
      },
      {
        // `@middy/core-floor` is npm's alias of @middy/core 6.4.5 (devDependencies).
        resolve: { alias: [{ find: /^@middy\/core$/, replacement: '@middy/core-floor' }] },
        test: {
          ...SHARED,
          name: 'middy-floor',
          include: MIDDY_FLOOR_SUITES,
          globalSetup: EMULATORS,
          // After the main project, not beside it: the suite's 1-second visibility timeouts are
          // sensitive to load, and its second copy would double the load of its first.
          sequence: { groupOrder: 1 },
          maxWorkers: 1,
        },
      },
    ],
  },
});

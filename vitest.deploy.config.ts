import { defineConfig } from 'vitest/config';

/** `npm run test:deploy`: the CDK CLI against moto (Python), apart from `npm test`'s emulators. */
export default defineConfig({
  test: {
    include: ['test/deploy/**/*.test.ts'],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    // One moto, one CDK app at a time: the files run one after another.
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 120_000,
  },
});

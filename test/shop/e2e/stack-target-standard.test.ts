import { afterAll } from 'vitest';
import { startSandboxAsStack } from './sandbox-stack.js';

// The end-to-end suite through ONCELY_TARGET=stack, as stack-target.test.ts runs it, against the
// shop's standard-queue stack (context queueType=standard, Shop-local-standard) on a sandbox that
// delivers every batch twice at once and again later. ONCELY_QUEUE_TYPE=standard chooses the cases,
// and the suite checks the stack's queue URL agrees, as it would on AWS. The edge's read side is
// the same for both queue types, and stack-target.test.ts checks it.

process.env.ONCELY_QUEUE_TYPE = 'standard';
const sandbox = await startSandboxAsStack({ context: { queueType: 'standard' }, duplicateDeliveries: true });

afterAll(async () => {
  await sandbox.stop();
});

await import('./pipeline-suite.js');

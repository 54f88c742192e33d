import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sqsClientVia } from '../../chaos/sdk-clients.js';
import { type FaultProxy, startFaultProxy } from '../../harness/fault-proxy.js';
import { targetedFaultPlan } from '../../harness/targeted-plan.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { lambdaContext } from '../support/lambda-context.js';
import { orders, usePublisherFixture } from '../support/publisher.js';
import { drainQueue } from '../support/sqs.js';

// Item 8 of issue 30: one SendMessageBatch that never answers must not use the invocation's whole
// budget. The fault proxy holds the call, unapplied, the way a half-open connection does.

const fixture = usePublisherFixture();
let proxy: FaultProxy;
let sqs: SQSClient;

beforeEach(async () => {
  proxy = await startFaultProxy({ service: 'sqs', upstream: emulatorEndpoint('sqsEndpoint') });
  sqs = sqsClientVia(proxy, 1);
});

afterEach(async () => {
  sqs.destroy();
  await proxy.close();
});

const stallBatches = (times?: number) =>
  proxy.setPlan(
    targetedFaultPlan({
      match: (request) => request.operation === 'SendMessageBatch',
      fault: { kind: 'hang' },
      ...(times ? { times } : {}),
    }),
  );

describe('publisher: a SendMessageBatch that stalls', () => {
  it('is one failed attempt, cut off after sqsCallTimeoutMs and retried within the budget', async () => {
    stallBatches(1);
    const messages = orders(3, 1);

    const { results } = await fixture.publisher({ sqs, sqsCallTimeoutMs: 200 })(
      { messages },
      lambdaContext(5_000),
    );

    expect(results.map((result) => result.status)).toEqual(['sent', 'sent', 'sent']);
    // The stalled call, its retry, then the group's other two: one message of a group per call.
    expect(proxy.stats().requests.SendMessageBatch).toBe(4);
    await proxy.close(); // drops the stalled call, which never reached the queue
    await drainQueue(fixture.sqs, fixture.queueUrl, messages.length);
  });

  it('stalling on every attempt, ends unknown: each call may have reached SQS', async () => {
    stallBatches();
    const messages = orders(2, 1);

    const { results } = await fixture.publisher({ sqs, sqsCallTimeoutMs: 100 })(
      { messages },
      lambdaContext(10_000),
    );

    // The first may be on the queue; the second, behind it, was never sent.
    expect(results.map((result) => result.status)).toEqual(['unknown', 'blocked']);
    expect(results[0]).toMatchObject({ reason: expect.stringContaining('no answer within 100 ms') });
    expect(proxy.stats().requests.SendMessageBatch).toBe(5); // FAST_RETRY's attempts, not one call
  });
});

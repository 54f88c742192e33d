import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it } from 'vitest';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import { PUBLISHER_METRICS } from '../../lambdas/publisher/metrics.js';
import { lambdaContext } from '../support/lambda-context.js';
import { orders, usePublisherFixture } from '../support/publisher.js';
import { holdSends } from '../support/sqs-faults.js';
import { capturingStdout } from '../support/telemetry.js';

const fixture = usePublisherFixture();

/** A publisher whose metrics go to stdout as EMF, as the deployed one's do. */
function publisherWithMetrics(options: { store?: DynamoDBIdempotencyStore } = {}) {
  const metrics = new Metrics({ namespace: 'oncely', serviceName: 'oncely-publisher' });
  return fixture.publisher({ metrics, ...options });
}

/** The EMF lines written while `run` ran, and whether it answered or failed. */
async function emfWhile(run: () => Promise<unknown>) {
  const { result, lines } = await capturingStdout(() =>
    run().then(
      () => 'answered' as const,
      () => 'failed' as const,
    ),
  );
  return { outcome: result, emf: lines.filter((line) => '_aws' in line) };
}

const refusal = (name: string, invokedBefore: number) => ({
  _aws: {
    Timestamp: expect.toSatisfy((at: number) => at >= invokedBefore && at <= Date.now()),
    CloudWatchMetrics: [
      {
        Namespace: 'oncely',
        Dimensions: [['service']],
        Metrics: [{ Name: PUBLISHER_METRICS.refused, Unit: 'Count' }],
      },
    ],
  },
  service: 'oncely-publisher',
  refusal: name,
  [PUBLISHER_METRICS.refused]: 1,
});

describe('publisher metrics: refusals counted apart from faults', () => {
  it('counts an invalid request once, as PublishRequestsRefused', async () => {
    const handler = publisherWithMetrics();
    const before = Date.now();
    const invalid = await emfWhile(() =>
      handler({ messages: [{ type: '', groupId: 'g' }] }, lambdaContext()),
    );
    expect(invalid).toEqual({ outcome: 'failed', emf: [refusal('PublishValidationError', before)] });
  });

  it('counts a requestId reused with other messages, and one still in progress', async () => {
    const handler = publisherWithMetrics();
    await handler({ requestId: 'r-1', messages: orders(2, 1) }, lambdaContext());
    let before = Date.now();
    const conflict = await emfWhile(() =>
      handler({ requestId: 'r-1', messages: orders(2, 1, 'other') }, lambdaContext()),
    );
    expect(conflict).toEqual({ outcome: 'failed', emf: [refusal('PublishConflictError', before)] });

    const { held, release } = holdSends(fixture.sqs);
    const second = orders(2, 1, 'second');
    const first = handler({ requestId: 'r-2', messages: second }, lambdaContext());
    await expect.poll(() => held(), { timeout: 60_000 }).toBe(true);
    before = Date.now();
    const inProgress = await emfWhile(() => handler({ requestId: 'r-2', messages: second }, lambdaContext()));
    release();
    await first;
    expect(inProgress).toEqual({ outcome: 'failed', emf: [refusal('PublishInProgressError', before)] });
  });

  it('counts nothing for a fault (its idempotency table is missing) or a success: those are Lambda’s Errors and Invocations', async () => {
    const missingTable = new DynamoDBIdempotencyStore({
      client: fixture.dynamodb,
      tableName: 'no-such-table',
    });
    const faulty = publisherWithMetrics({ store: missingTable });
    const fault = await emfWhile(() => faulty({ requestId: 'r-3', messages: orders(1, 1) }, lambdaContext()));
    expect(fault).toEqual({ outcome: 'failed', emf: [] });
    const success = await emfWhile(() => publisherWithMetrics()({ messages: orders(1, 1) }, lambdaContext()));
    expect(success).toEqual({ outcome: 'answered', emf: [] });
  });
});

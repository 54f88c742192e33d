import { randomUUID } from 'node:crypto';
import { CONSUMER_METRICS } from 'oncely/consumer';
import { DynamoDBIdempotencyStore } from 'oncely/idempotency';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createShopHandler } from '../../lambdas/shop/consumer/consumer.js';
import { DEFAULT_NOTIFICATION_TIMEOUT_MS } from '../../lambdas/shop/consumer/environment.js';
import { createTable, localDynamoClient } from '../support/dynamodb.js';
import { lambdaContext } from '../support/lambda-context.js';
import { createQueueWithDlq, deleteQueues, localSqsClient, publish, sendBody } from '../support/sqs.js';
import { pollOnce } from '../support/sqs-event-source.js';

// What the example consumer writes with its real Powertools logger and metrics: JSON log lines and
// CloudWatch EMF on stdout/stderr, as Lambda would ship them.

const dynamodb = localDynamoClient();
const sqs = localSqsClient();

beforeAll(() => {
  vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'oncely-consumer');
  vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'Oncely');
  vi.stubEnv('ONCELY_PIPELINE', 'Shop-dev/Pipeline'); // as the construct sets it
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  vi.stubEnv('POWERTOOLS_DEV', 'false');
});

afterAll(() => {
  vi.unstubAllEnvs();
  sqs.destroy();
  dynamodb.destroy();
});

/** Everything written to stdout and stderr while `run` runs, as parsed JSON lines. */
async function capturedJsonLines(run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const written: string[] = [];
  const capture = (chunk: unknown) => {
    written.push(String(chunk));
    return true;
  };
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  try {
    await run();
  } finally {
    stdout.mockRestore();
    stderr.mockRestore();
  }
  return written
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

describe('example consumer: observability', () => {
  it('logs every line of a record with its key, group and message id, and publishes EMF metrics', async () => {
    const [idempotencyTable, ledgerTable, { queue, dlq }] = await Promise.all([
      createTable(dynamodb, 'consumer-idem'),
      createTable(dynamodb, 'ledger'),
      createQueueWithDlq(sqs, { visibilityTimeoutSeconds: 3, maxReceiveCount: 5 }),
    ]);
    // As deployed: fifoBatch's own Powertools logger and metrics; only the store and the DLQ are the test's.
    const handler = createShopHandler(
      {
        ledgerTableName: ledgerTable,
        notificationUrl: 'http://127.0.0.1:9/unused',
        notificationTimeoutMs: DEFAULT_NOTIFICATION_TIMEOUT_MS,
        notificationMode: 'at-most-once',
      },
      {
        store: new DynamoDBIdempotencyStore({ client: dynamodb, tableName: idempotencyTable }),
        deadLetterQueue: { client: sqs, queueUrl: dlq.url, sourceQueueUrl: queue.url },
      },
    );
    const stock = {
      type: 'StockReceived',
      groupId: 'warehouse',
      key: randomUUID(),
      payload: { sku: 'sku-1', quantity: 5 },
    };
    const ids = [
      await publish(sqs, queue.url, stock),
      await publish(sqs, queue.url, stock, randomUUID()), // a duplicate
      await publish(sqs, queue.url, {
        type: 'Unheard',
        groupId: 'warehouse',
        key: randomUUID(),
        payload: {},
      }),
      await sendBody(sqs, queue.url, 'not an envelope', 'elsewhere', 'dedup-of-a-broken-body'),
    ];

    const context = lambdaContext();

    const lines = await capturedJsonLines(() => pollOnce(sqs, queue, handler, { context }));

    const recordLines = lines.filter((line) => 'messageId' in line);
    expect(recordLines.map((line) => line.messageId)).toEqual(expect.arrayContaining(ids));
    for (const line of recordLines) {
      expect(line).toMatchObject({
        service: 'oncely-consumer',
        // fifoBatch's own logger gets each invocation's context, as injectLambdaContext would give it.
        function_request_id: context.awsRequestId,
        messageKey: expect.any(String),
        groupId: expect.any(String),
      });
    }
    const about = (messageId: string | undefined) =>
      recordLines
        .filter((line) => line.messageId === messageId)
        .map((line) => [line.level, line.message, line.messageKey]);
    expect(about(ids[0])).toEqual([['INFO', 'processed', stock.key]]);
    expect(about(ids[1])).toEqual([
      ['INFO', 'duplicate of a completed record: acknowledged without running', stock.key],
    ]);
    expect(about(ids[3])).toEqual([
      ['WARN', 'sent to the DLQ at once: no retry can fix this record', 'dedup-of-a-broken-body'],
    ]);

    const emf = lines.find((line) => '_aws' in line);
    expect(emf?._aws).toMatchObject({
      // The pipeline's dimension too: its alarms select it (issue 41).
      CloudWatchMetrics: [{ Namespace: 'Oncely', Dimensions: [['service', 'pipeline']] }],
    });
    expect(emf).toMatchObject({
      service: 'oncely-consumer',
      pipeline: 'Shop-dev/Pipeline',
      [CONSUMER_METRICS.processed]: 1,
      [CONSUMER_METRICS.duplicate]: 1,
      [CONSUMER_METRICS.sentToDlq]: [1, 1],
    });
    await deleteQueues(sqs, [queue, dlq]);
  });
});

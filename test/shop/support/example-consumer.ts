import { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBIdempotencyStore, type IdempotencyMode } from 'oncely/idempotency';
import { vi } from 'vitest';
import { createShopHandler } from '../../../lambdas/shop/consumer/consumer.js';
import { DEFAULT_NOTIFICATION_TIMEOUT_MS } from '../../../lambdas/shop/consumer/environment.js';
import { createTable } from '../../support/dynamodb.js';
import { createQueueWithDlq, type FifoQueue } from '../../support/sqs.js';
import { silentLogger } from '../../support/telemetry.js';

export interface ExampleConsumerOptions {
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  notificationUrl?: string;
  notificationTimeoutMs?: number;
  notificationMode?: IdempotencyMode;
  maxReceiveCount?: number;
  now?: () => number;
}

/**
 * The shop's consumer wired to its own tables and queues on the emulators, as the stack would wire
 * it — with the test's clients and clock instead of the environment's. Metrics are recorded, not printed.
 */
export async function exampleConsumer(options: ExampleConsumerOptions) {
  const [idempotencyTable, ledgerTable, queues] = await Promise.all([
    createTable(options.dynamodb, 'consumer-idem'),
    createTable(options.dynamodb, 'ledger'),
    createQueueWithDlq(options.sqs, {
      visibilityTimeoutSeconds: 3,
      maxReceiveCount: options.maxReceiveCount ?? 5,
    }),
  ]);
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
  const metrics = new Metrics({ namespace: 'OncelyTest', serviceName: 'consumer-test' });
  const added = vi.spyOn(metrics, 'addMetric');
  /** How much of a metric the consumer added so far. */
  const metricCount = (name: string) =>
    added.mock.calls.filter(([metric]) => metric === name).reduce((sum, [, , value]) => sum + value, 0);
  const config = {
    ledgerTableName: ledgerTable,
    notificationUrl: options.notificationUrl ?? 'http://127.0.0.1:9/unused',
    notificationTimeoutMs: options.notificationTimeoutMs ?? DEFAULT_NOTIFICATION_TIMEOUT_MS,
    notificationMode: options.notificationMode ?? ('at-most-once' as const),
  };
  /** A new container: its own caches, the same tables and queues. */
  const container = () =>
    createShopHandler(config, {
      store: new DynamoDBIdempotencyStore({
        client: options.dynamodb,
        tableName: idempotencyTable,
        now: options.now,
      }),
      deadLetterQueue: { client: options.sqs, queueUrl: queues.dlq.url, sourceQueueUrl: queues.queue.url },
      logger: silentLogger(),
      metrics,
    });
  const { queue, dlq }: { queue: FifoQueue; dlq: FifoQueue } = queues;
  return { handler: container(), container, queue, dlq, idempotencyTable, ledgerTable, metricCount };
}

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { parseEnvelope } from '../../lambdas/common/envelope.js';
import { DEFAULT_MAX_CONCURRENT_GROUPS } from '../../lambdas/consumer/fifo-batch.js';
import { planGroups } from '../../lambdas/consumer/group-plan.js';
import { runGroups } from '../../lambdas/consumer/group-runner.js';
import { type ShopSettings, shopEventEffect, shopSettingsFromEnvironment } from './shop-events.js';

export interface IdempotencyFreeConsumerOptions extends ShopSettings {
  dynamodb: DynamoDBClient;
}

/**
 * The example consumer without idempotency: the same writes, the same FIFO rules (groups at once, each
 * in order, the rest of a group skipped after a failure), but no idempotency record — so a redelivered
 * message applies twice. What "without idempotency" costs nothing for, and the baseline of the
 * end-to-end throughput.
 */
export function createIdempotencyFreeConsumerHandler(options: IdempotencyFreeConsumerOptions) {
  const effect = shopEventEffect(DynamoDBDocumentClient.from(options.dynamodb), options);
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const groups = planGroups(event.Records, (record) => record.attributes.MessageGroupId ?? '');
    const { failed, skipped } = await runGroups(groups, DEFAULT_MAX_CONCURRENT_GROUPS, () => ({
      processRecord: async (record) => {
        try {
          await effect(parseEnvelope(record.body));
          return 'succeeded';
        } catch {
          return 'failed';
        }
      },
    }));
    return {
      batchItemFailures: [...failed, ...skipped].map((record: SQSRecord) => ({
        itemIdentifier: record.messageId,
      })),
    };
  };
}

let configured: ReturnType<typeof createIdempotencyFreeConsumerHandler> | undefined;

/** The Lambda entry point, reading the example consumer's variables; built on the first invocation. */
export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  configured ??= createIdempotencyFreeConsumerHandler({
    dynamodb: new DynamoDBClient({}),
    ...shopSettingsFromEnvironment(),
  });
  return configured(event);
}

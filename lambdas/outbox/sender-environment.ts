import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { RetryPolicy } from '../common/backoff.js';
import { sqsBatchSender } from '../publisher/sqs-batch.js';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  integerVariable,
  OUTBOX_ENVIRONMENT,
  outboxLayout,
  requiredVariable,
} from './environment.js';
import { OutboxItems } from './outbox-items.js';
import type { SenderOptions } from './relay.js';

/** Failed entries are sent again a few times within one invocation; after that the next run does. */
export const OUTBOX_SEND_RETRY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 50, maxDelayMs: 1_000 };

/** A claim outlives the invocation by this much, so no one sends what a running invocation may be sending. */
export const CLAIM_MARGIN_MS = 10_000;

/** The relay's and sweeper's clients and settings, from OUTBOX_ENVIRONMENT and the AWS SDK's defaults. */
export function senderFromEnvironment(): Omit<SenderOptions, 'claimMs'> {
  const queueUrl = requiredVariable(OUTBOX_ENVIRONMENT.queueUrl);
  return {
    items: new OutboxItems({ client: new DynamoDBClient({}), layout: outboxLayout({}) }),
    // One attempt per call: the ordered sender retries failed entries itself, with the same ids.
    sendBatch: sqsBatchSender(new SQSClient({ maxAttempts: 1 }), queueUrl),
    maxBatchBytes: integerVariable(OUTBOX_ENVIRONMENT.maxMessageBytes, DEFAULT_MAX_MESSAGE_BYTES, 1_024),
    retry: OUTBOX_SEND_RETRY,
  };
}

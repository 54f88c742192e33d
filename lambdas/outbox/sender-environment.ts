import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
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

/** Kept back from the invocation's time to give claims back and answer. */
const RESERVE_MS = 2_000;

/**
 * An invocation's clock, from its Lambda context: how long it may still work, and how long a claim
 * taken now lasts — the time left at that moment plus CLAIM_MARGIN_MS (DESIGN §9), so a claim
 * taken late does not outlive the invocation by nearly the whole invocation.
 */
export function invocationTimes(
  context: Pick<Context, 'getRemainingTimeInMillis'>,
): Pick<SenderOptions, 'claimMs'> & { timeLeftMs: () => number } {
  return {
    timeLeftMs: () => context.getRemainingTimeInMillis() - RESERVE_MS,
    claimMs: () => context.getRemainingTimeInMillis() + CLAIM_MARGIN_MS,
  };
}

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

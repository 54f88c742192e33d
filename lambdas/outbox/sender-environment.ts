import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import type { RetryPolicy } from '../common/backoff.js';
import { type Environment, EnvironmentReader } from '../common/environment.js';
import { isFifoQueueUrl } from '../common/queue-type.js';
import { tracedSendBatch } from '../publisher/send-span.js';
import { sqsBatchSender } from '../publisher/sqs-batch.js';
import {
  DEFAULT_STUCK_AFTER_SECONDS,
  DEFAULT_SWEEP_AFTER_SECONDS,
  layoutOf,
  maxMessageBytesOf,
  OUTBOX_ENVIRONMENT,
} from './environment.js';
import { OutboxItems } from './outbox-items.js';
import type { SenderOptions } from './relay.js';
import type { SweepOptions } from './sweeper.js';

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

const SENDER_REMEDY =
  'The OncelyOutbox construct sets these variables on its functions, and `oncely local` in its sandbox.';

/**
 * The relay's and sweeper's clients and settings, from OUTBOX_ENVIRONMENT and the AWS SDK's
 * defaults; `sender` names whose sends their spans are (DESIGN §6). The OncelyConfigurationError
 * names every variable to fix.
 */
export function senderFromEnvironment(
  sender: 'relay' | 'sweeper',
  environment: Environment = process.env,
): Omit<SenderOptions, 'claimMs'> {
  const read = new EnvironmentReader(environment);
  const queueUrl = read.required(OUTBOX_ENVIRONMENT.queueUrl);
  const layout = layoutOf(read);
  const maxBatchBytes = maxMessageBytesOf(read);
  read.check("The outbox's relay or sweeper cannot start", SENDER_REMEDY);
  return {
    items: new OutboxItems({ client: new DynamoDBClient({}), layout }),
    // One attempt per call: the ordered sender retries failed entries itself, with the same ids.
    sendBatch: tracedSendBatch(sqsBatchSender(new SQSClient({ maxAttempts: 1 }), queueUrl), queueUrl, sender),
    maxBatchBytes,
    ordered: isFifoQueueUrl(queueUrl),
    retry: OUTBOX_SEND_RETRY,
  };
}

/** The sweeper's age bounds, in milliseconds, from OUTBOX_ENVIRONMENT. */
export function sweepBoundsFromEnvironment(
  environment: Environment = process.env,
): Pick<SweepOptions, 'sweepAfterMs' | 'stuckAfterMs'> {
  const read = new EnvironmentReader(environment);
  const { sweepAfterSeconds, stuckAfterSeconds } = OUTBOX_ENVIRONMENT;
  const bounds = {
    sweepAfterMs: read.integer(sweepAfterSeconds, { min: 0 }, DEFAULT_SWEEP_AFTER_SECONDS) * 1000,
    stuckAfterMs: read.integer(stuckAfterSeconds, { min: 1 }, DEFAULT_STUCK_AFTER_SECONDS) * 1000,
  };
  read.check("The outbox's sweeper cannot start", SENDER_REMEDY);
  return bounds;
}

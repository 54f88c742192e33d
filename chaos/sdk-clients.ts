import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { localAwsConfig } from '../sandbox/local-aws-config.js';

/**
 * A first try and two retries. Set explicitly because the SDK's defaults differ by client: in the
 * SDK pinned here (client-dynamodb 3.1162, client-sqs 3.1169) SQSClient makes 3 attempts but
 * DynamoDBClient makes 4 (with a 25 ms base backoff instead of 50 ms).
 *
 * The standard strategy retries 5xx answers, connection resets and throttling errors, with full
 * jitter (a random wait up to base × 2^retry; the base is 1 s for throttling), and spends retry
 * quota per client (500 tokens; 14 per transient retry, 5 per throttling retry, refunded by
 * successes), so a long run of faults through one client can stop retries altogether.
 */
export const CHAOS_MAX_ATTEMPTS = 3;

/**
 * The schedules' clients back off a few milliseconds instead: thousands of schedules must run in
 * minutes, and how long a retry waits changes nothing of what it meets. Same attempts, same quota.
 */
const retryStrategy = (maxAttempts: number) =>
  new ConfiguredRetryStrategy(maxAttempts, (attempt: number) => 2 * attempt);

interface Endpoint {
  readonly endpoint: string;
}

/** A DynamoDB client that talks through `proxy`, with the standard retry strategy. */
export function dynamoDbClientVia(proxy: Endpoint, maxAttempts = CHAOS_MAX_ATTEMPTS): DynamoDBClient {
  return new DynamoDBClient({ ...localAwsConfig(proxy.endpoint), retryStrategy: retryStrategy(maxAttempts) });
}

/** An SQS client that talks through `proxy`; its explicit endpoint keeps QueueUrls from bypassing it. */
export function sqsClientVia(proxy: Endpoint, maxAttempts = CHAOS_MAX_ATTEMPTS): SQSClient {
  return new SQSClient({ ...localAwsConfig(proxy.endpoint), retryStrategy: retryStrategy(maxAttempts) });
}

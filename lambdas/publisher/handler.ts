import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { RECORD_WRITE_RETRY, type RetryPolicy, retriedWorstCaseMs } from '../common/backoff.js';
import type { Environment } from '../common/environment.js';
import { metricsScope } from '../common/metrics-scope.js';
import { isFifoQueueUrl } from '../common/queue-type.js';
import { type CompletedRecordCache, DynamoDBIdempotencyStore } from '../idempotency/index.js';
import { PUBLISH_NAMESPACE } from '../idempotency/keys.js';
import { requestIdempotency } from '../idempotency/middleware.js';
import type { PublishResponse } from './contract.js';
import { readPublisherEnvironment } from './environment.js';
import { refusalMetrics } from './metrics.js';
import { earlierRunUncertainty, publisherErrors, validation } from './middlewares.js';
import { sendInGroupOrder } from './ordered-sender.js';
import { tracedSendBatch } from './send-span.js';
import { sqsBatchSender } from './sqs-batch.js';
import type { PublishCommand } from './validation.js';

/** What Lambda calls: the raw event in, the response (or a publisher error) out. */
export type PublisherHandler = (event: unknown, context: Context) => Promise<PublishResponse>;

export interface PublisherOptions {
  sqs: SQSClient;
  queueUrl: string;
  /** The queue's maximum message size: the limit for each body, and for a batch's bodies together. */
  maxMessageBytes: number;
  /** The idempotency table, for requests with a requestId. */
  store: DynamoDBIdempotencyStore;
  /** How failed entries are retried; within the invocation's remaining time in any case. */
  retry?: RetryPolicy;
  /**
   * Time kept back from the invocation's remaining time to record and return the response.
   * @default 3_500: the completion write's worst case with `PUBLISHER_STORE_CLIENT_CONFIG`, and time to answer
   */
  reserveMs?: number;
  /**
   * The most one SendMessageBatch call may take: a call that stalls is cut off then and retried,
   * as a failed attempt that may have reached SQS.
   * @default 5_000
   */
  sqsCallTimeoutMs?: number;
  /** The idempotency middleware's per-container cache of completed requests; `false` turns it off. */
  cache?: CompletedRecordCache | false;
  /**
   * Where refused requests are counted (`PUBLISHER_METRICS`).
   * @default a Powertools `Metrics` from POWERTOOLS_METRICS_NAMESPACE and POWERTOOLS_SERVICE_NAME
   */
  metrics?: Metrics;
}

export const DEFAULT_PUBLISH_RETRY: RetryPolicy = { maxAttempts: 8, baseDelayMs: 50, maxDelayMs: 2_000 };

/** How long one request of the publisher's idempotency store may take before it is cut off. */
const STORE_REQUEST_TIMEOUT_MS = 1_000;

/**
 * The client of the publisher's idempotency store: each request cut off after
 * STORE_REQUEST_TIMEOUT_MS and not retried by the SDK (whose waits are its own), since the core
 * retries its record writes itself (RECORD_WRITE_RETRY): so the completion write has a known worst case.
 */
export const PUBLISHER_STORE_CLIENT_CONFIG = {
  maxAttempts: 1,
  requestHandler: { requestTimeout: STORE_REQUEST_TIMEOUT_MS, throwOnRequestTimeout: true },
};

/**
 * Kept back from the sending to record and return the response: the completion write's worst
 * case — 3 tries cut off at 1 s, waits of at most 50 and 100 ms between them: 3.15 s — plus
 * 350 ms to answer. A completion that still fails makes the request fail retryably (issue 30).
 */
const DEFAULT_RESERVE_MS = retriedWorstCaseMs(RECORD_WRITE_RETRY, STORE_REQUEST_TIMEOUT_MS) + 350;

/**
 * The publisher (DESIGN §6): validate everything, then send in batches without ever reordering a
 * message group; with a requestId, the whole request is idempotent. To a standard queue (DESIGN
 * §5.1), which keeps no order, each message is sent and retried on its own.
 */
export function createPublisherHandler(options: PublisherOptions): PublisherHandler {
  const sendBatch = tracedSendBatch(
    sqsBatchSender(options.sqs, options.queueUrl, options.sqsCallTimeoutMs),
    options.queueUrl,
    'publisher',
  );
  const reserveMs = options.reserveMs ?? DEFAULT_RESERVE_MS;
  const ordered = isFifoQueueUrl(options.queueUrl);
  const publish = async (command: PublishCommand, context: Context): Promise<PublishResponse> => ({
    results: await sendInGroupOrder(command.prepared, {
      sendBatch,
      maxBatchBytes: options.maxMessageBytes,
      retry: options.retry ?? DEFAULT_PUBLISH_RETRY,
      timeLeftMs: () => context.getRemainingTimeInMillis() - reserveMs,
      ordered,
    }),
    // Stored with the results: a replay then tells its caller which call produced it.
    ...(command.callId === undefined ? {} : { callId: command.callId }),
    // Also stored: the client's re-send rounds keep a group's order only where the queue does.
    ...(ordered ? {} : { queueType: 'standard' as const }),
  });

  const idempotency = requestIdempotency<PublishCommand, PublishResponse>({
    store: options.store,
    namespace: PUBLISH_NAMESPACE,
    key: (command) => command.requestId,
    // The messages as given: the prepared bodies carry a timestamp that differs on every repeat.
    payload: (command) => command.messages,
    cache: options.cache,
  });
  const handler = middy<PublishCommand, PublishResponse>(publish)
    // Before publisherErrors(), so that it counts the refusals under their publisher names.
    .use(refusalMetrics(options.metrics ?? new Metrics({ defaultDimensions: metricsScope() })))
    .use(publisherErrors())
    .use(validation({ maxMessageBytes: options.maxMessageBytes }))
    .use(idempotency.middleware)
    .use(earlierRunUncertainty(idempotency.attemptOf));
  // The validation middleware turns the raw event into a command before anything else sees it.
  return handler as PublisherHandler;
}

/** The publisher as deployed: configured from PUBLISHER_ENVIRONMENT and the AWS SDK's defaults. */
export function publisherFromEnvironment(env: Environment = process.env): PublisherHandler {
  const environment = readPublisherEnvironment(env);
  return createPublisherHandler({
    // One attempt per call: the publisher retries failed entries itself, within the invocation's time.
    sqs: new SQSClient({ maxAttempts: 1 }),
    queueUrl: environment.queueUrl,
    maxMessageBytes: environment.queueMaxMessageBytes,
    store: new DynamoDBIdempotencyStore({
      client: new DynamoDBClient(PUBLISHER_STORE_CLIENT_CONFIG),
      tableName: environment.idempotencyTableName,
      ttlSeconds: environment.idempotencyTtlSeconds,
    }),
  });
}

let configured: PublisherHandler | undefined;

/**
 * The Lambda entry point: the Middy handler of `publisherFromEnvironment`, built on the first
 * invocation, so that importing this module needs no environment.
 */
export const handler: PublisherHandler = async (event, context) => {
  configured ??= publisherFromEnvironment();
  return configured(event, context);
};

import { type Environment, EnvironmentReader } from '../common/environment.js';

/**
 * The publisher's environment variables: the CDK stack and the local sandbox set exactly these,
 * by these names.
 */
export const PUBLISHER_ENVIRONMENT = {
  /** URL of the queue the messages go to: FIFO (`….fifo`) or standard (DESIGN §5.1). */
  queueUrl: 'QUEUE_URL',
  /** The idempotency table (DESIGN §3), for requests with a requestId. */
  idempotencyTableName: 'IDEMPOTENCY_TABLE_NAME',
  /** Optional: the queue's MaximumMessageSize in bytes (1,024–1,048,576); 262,144 by default. */
  queueMaxMessageBytes: 'QUEUE_MAX_MESSAGE_BYTES',
  /** Optional: how long a requestId is remembered, in seconds; the idempotency core's default (30 days) otherwise. */
  idempotencyTtlSeconds: 'IDEMPOTENCY_TTL_SECONDS',
} as const;

/** SQS's default MaximumMessageSize. */
export const DEFAULT_QUEUE_MAX_MESSAGE_BYTES = 262_144;

export interface PublisherEnvironment {
  queueUrl: string;
  idempotencyTableName: string;
  queueMaxMessageBytes: number;
  idempotencyTtlSeconds?: number;
}

/** Reads and checks the publisher's variables; the OncelyConfigurationError names every one to fix. */
export function readPublisherEnvironment(environment: Environment = process.env): PublisherEnvironment {
  const read = new EnvironmentReader(environment);
  const { queueUrl, idempotencyTableName, queueMaxMessageBytes, idempotencyTtlSeconds } =
    PUBLISHER_ENVIRONMENT;
  const values = {
    queueUrl: read.required(queueUrl),
    idempotencyTableName: read.required(idempotencyTableName),
    queueMaxMessageBytes: read.integer(
      queueMaxMessageBytes,
      { min: 1_024, max: 1_048_576 },
      DEFAULT_QUEUE_MAX_MESSAGE_BYTES,
    ),
    idempotencyTtlSeconds: read.integer(idempotencyTtlSeconds, { min: 1 }),
  };
  read.check(
    'The publisher cannot start',
    'The OncelyPipeline construct and the local sandbox set these variables; set them yourself when ' +
      'running the handler anywhere else.',
  );
  return values;
}

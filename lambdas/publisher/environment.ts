/**
 * The publisher's environment variables: the CDK stack and the local sandbox set exactly these,
 * by these names.
 */
export const PUBLISHER_ENVIRONMENT = {
  /** URL of the FIFO queue the messages go to. */
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

/** The environment lacks a variable or has an unusable value; the message names every one. */
export class PublisherEnvironmentError extends Error {
  override readonly name = 'PublisherEnvironmentError';
}

export function readPublisherEnvironment(env: NodeJS.ProcessEnv = process.env): PublisherEnvironment {
  const problems: string[] = [];
  const required = (name: string): string => {
    const value = env[name];
    if (!value) problems.push(`${name} is not set`);
    return value ?? '';
  };
  const optionalInteger = (name: string, min: number, max: number): number | undefined => {
    const value = env[name];
    if (value === undefined || value === '') return undefined;
    const number = Number(value);
    if (!Number.isInteger(number) || number < min || number > max) {
      problems.push(`${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(value)}`);
    }
    return number;
  };

  const {
    queueUrl: queueUrlName,
    idempotencyTableName: tableName,
    queueMaxMessageBytes: maxBytesName,
    idempotencyTtlSeconds: ttlName,
  } = PUBLISHER_ENVIRONMENT;
  const environment = {
    queueUrl: required(queueUrlName),
    idempotencyTableName: required(tableName),
    queueMaxMessageBytes: optionalInteger(maxBytesName, 1_024, 1_048_576) ?? DEFAULT_QUEUE_MAX_MESSAGE_BYTES,
    idempotencyTtlSeconds: optionalInteger(ttlName, 1, Number.MAX_SAFE_INTEGER),
  };
  if (problems.length > 0) {
    throw new PublisherEnvironmentError(
      `The publisher cannot start: ${problems.join('; ')}. The CDK stack and the local sandbox set these ` +
        'variables; set them yourself when running the handler anywhere else.',
    );
  }
  return environment;
}

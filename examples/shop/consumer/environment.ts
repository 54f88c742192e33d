import { z } from 'zod';
import { type IdempotencyMode, NonRetryableError } from '../../../src/idempotency/index.js';

/**
 * The consumer's environment variables: the CDK stack and the local sandbox set exactly these.
 * Powertools reads its own (`POWERTOOLS_SERVICE_NAME`, `POWERTOOLS_METRICS_NAMESPACE`, …).
 */
export const CONSUMER_ENVIRONMENT = {
  idempotencyTableName: 'IDEMPOTENCY_TABLE_NAME',
  ledgerTableName: 'LEDGER_TABLE_NAME',
  dlqUrl: 'DLQ_URL',
  notificationUrl: 'NOTIFICATION_URL',
  /** Optional: the queue the consumer reads; a record dead-lettered is then deleted from it at once. */
  queueUrl: 'QUEUE_URL',
  /** Optional: lifetime of an idempotency record; must outlive queue + DLQ retention. */
  idempotencyTtlSeconds: 'IDEMPOTENCY_TTL_SECONDS',
  /** Optional: how many message groups of a batch run at once. */
  maxConcurrentGroups: 'MAX_CONCURRENT_GROUPS',
  /** Optional: how long a notification POST may take before its outcome counts as unknown. */
  notificationTimeoutMs: 'NOTIFICATION_TIMEOUT_MS',
  /** Optional: `at-most-once` (default: a crashed send is parked IN_DOUBT) or `at-least-once` (it is re-sent). */
  notificationMode: 'NOTIFICATION_MODE',
} as const;

export const DEFAULT_NOTIFICATION_TIMEOUT_MS = 5_000;

const required = (name: string) => z.string(`${name} is not set`).min(1, `${name} is empty`);
const positiveInteger = (name: string) =>
  z.coerce
    .number<string>(`${name} must be a whole number`)
    .int(`${name} must be a whole number`)
    .positive(`${name} must be positive`);
const httpUrl = (name: string) =>
  required(name).pipe(z.url({ protocol: /^https?$/, error: `${name} must be an http(s) URL` }));

const { idempotencyTableName, ledgerTableName, dlqUrl, notificationUrl, ...optional } = CONSUMER_ENVIRONMENT;
const environmentSchema = z.object({
  [idempotencyTableName]: required(idempotencyTableName),
  [ledgerTableName]: required(ledgerTableName),
  [dlqUrl]: httpUrl(dlqUrl),
  [notificationUrl]: httpUrl(notificationUrl),
  [optional.queueUrl]: httpUrl(optional.queueUrl).optional(),
  [optional.idempotencyTtlSeconds]: positiveInteger(optional.idempotencyTtlSeconds).optional(),
  [optional.maxConcurrentGroups]: positiveInteger(optional.maxConcurrentGroups).optional(),
  [optional.notificationTimeoutMs]: positiveInteger(optional.notificationTimeoutMs).optional(),
  [optional.notificationMode]: z
    .enum(
      ['at-most-once', 'at-least-once'],
      `${optional.notificationMode} must be at-most-once or at-least-once`,
    )
    .optional(),
});

export interface ConsumerConfig {
  idempotencyTableName: string;
  ledgerTableName: string;
  dlqUrl: string;
  notificationUrl: string;
  /** The source queue; without it a dead-lettered record is left for the event source mapping to delete. */
  queueUrl?: string;
  /** The store's default (30 days) when unset. */
  idempotencyTtlSeconds?: number;
  /** The middleware's default (10) when unset. */
  maxConcurrentGroups?: number;
  notificationTimeoutMs: number;
  notificationMode: IdempotencyMode;
}

/** The consumer cannot start: its environment is incomplete or wrong. */
export class ConsumerEnvironmentError extends NonRetryableError {
  static override readonly errorName: string = 'ConsumerEnvironmentError';
}

/** Reads and checks the consumer's environment; the error names every missing or invalid variable. */
export function readConsumerConfig(environment: NodeJS.ProcessEnv = process.env): ConsumerConfig {
  const parsed = environmentSchema.safeParse(environment);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => issue.message);
    throw new ConsumerEnvironmentError(
      `the consumer's environment is incomplete or invalid: ${problems.join('; ')}. ` +
        'The CDK stack sets these variables; when running it by hand, set them as README "Writing a consumer" lists.',
    );
  }
  const env = parsed.data;
  return {
    idempotencyTableName: env[idempotencyTableName],
    ledgerTableName: env[ledgerTableName],
    dlqUrl: env[dlqUrl],
    notificationUrl: env[notificationUrl],
    queueUrl: env[optional.queueUrl],
    idempotencyTtlSeconds: env[optional.idempotencyTtlSeconds],
    maxConcurrentGroups: env[optional.maxConcurrentGroups],
    notificationTimeoutMs: env[optional.notificationTimeoutMs] ?? DEFAULT_NOTIFICATION_TIMEOUT_MS,
    notificationMode: env[optional.notificationMode] ?? 'at-most-once',
  };
}

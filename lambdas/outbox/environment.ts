import { OncelyError } from '../idempotency/errors.js';
import { DEFAULT_PARTITION_KEY, DEFAULT_SORT_KEY, type OutboxLayout } from './layout.js';

/**
 * The environment variables of the outbox's functions and of producers using `oncely/outbox`. The
 * OncelyOutbox construct sets them (`grantWrite` on a producer), and so does `oncely local`.
 */
export const OUTBOX_ENVIRONMENT = {
  /** The table holding the outbox items. */
  tableName: 'OUTBOX_TABLE_NAME',
  /** Optional: the table's partition key attribute; `pk` when unset. */
  partitionKey: 'OUTBOX_PARTITION_KEY',
  /** Optional: the table's sort key attribute; `sk` when unset. */
  sortKey: 'OUTBOX_SORT_KEY',
  /** Relay and sweeper: the FIFO queue the messages go to. */
  queueUrl: 'OUTBOX_QUEUE_URL',
  /** Optional: the queue's maximum message size in bytes; every message must fit. 262,144 when unset. */
  maxMessageBytes: 'OUTBOX_MAX_MESSAGE_BYTES',
  /** Sweeper: how old a pending message must be before the sweeper sends it, in seconds; 60 when unset. */
  sweepAfterSeconds: 'OUTBOX_SWEEP_AFTER_SECONDS',
  /** Sweeper: how old a pending message is when it counts as stuck, in seconds; 300 when unset. */
  stuckAfterSeconds: 'OUTBOX_STUCK_AFTER_SECONDS',
} as const;

export const DEFAULT_MAX_MESSAGE_BYTES = 262_144;
export const DEFAULT_SWEEP_AFTER_SECONDS = 60;
export const DEFAULT_STUCK_AFTER_SECONDS = 300;

/**
 * The outbox's configuration is incomplete or invalid: at run time (no table, a bad variable) or at
 * synth (an OncelyOutbox whose props or table do not fit). No retry can fix it.
 */
export class OutboxConfigurationError extends OncelyError {
  static override readonly errorName: string = 'OutboxConfigurationError';
  readonly retryable = false;
}

type Environment = Readonly<Record<string, string | undefined>>;

/** The table and its key attributes, from the options given, else the environment. */
export function outboxLayout(
  options: Partial<OutboxLayout>,
  environment: Environment = process.env,
): OutboxLayout {
  const tableName = options.tableName ?? environment[OUTBOX_ENVIRONMENT.tableName];
  if (!tableName) {
    throw new OutboxConfigurationError(
      `no outbox table: pass tableName, or set ${OUTBOX_ENVIRONMENT.tableName} ` +
        '(OncelyOutbox.grantWrite sets it on your function).',
    );
  }
  return {
    tableName,
    partitionKey:
      options.partitionKey ?? (environment[OUTBOX_ENVIRONMENT.partitionKey] || DEFAULT_PARTITION_KEY),
    sortKey: options.sortKey ?? (environment[OUTBOX_ENVIRONMENT.sortKey] || DEFAULT_SORT_KEY),
  };
}

/** A required variable, or a configuration error naming it. */
export function requiredVariable(name: string, environment: Environment = process.env): string {
  const value = environment[name];
  if (!value) throw new OutboxConfigurationError(`${name} is not set: the OncelyOutbox construct sets it.`);
  return value;
}

/** An optional whole number of at least `min`, or a configuration error naming it. */
export function integerVariable(
  name: string,
  fallback: number,
  min: number,
  environment: Environment = process.env,
): number {
  const value = environment[name];
  if (value === undefined || value === '') return fallback;
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < min) {
    throw new OutboxConfigurationError(
      `${name} must be a whole number of at least ${min}, not ${JSON.stringify(value)}`,
    );
  }
  return number;
}

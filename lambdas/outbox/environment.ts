import { type Environment, EnvironmentReader } from '../common/environment.js';
import {
  DEFAULT_PARTITION_KEY,
  DEFAULT_PENDING_SHARDS,
  DEFAULT_SORT_KEY,
  MAX_PENDING_SHARDS,
  type OutboxLayout,
} from './layout.js';

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
  /** Relay and sweeper: the queue the messages go to, FIFO (`….fifo`) or standard (DESIGN §5.1). */
  queueUrl: 'OUTBOX_QUEUE_URL',
  /** Optional: the queue's maximum message size in bytes; every message must fit. 262,144 when unset. */
  maxMessageBytes: 'OUTBOX_MAX_MESSAGE_BYTES',
  /** Producers, optional: how many shards of the pending index their markers spread over (1–32); 8 when unset. */
  pendingShards: 'OUTBOX_PENDING_SHARDS',
  /** Sweeper: how old a pending message must be before the sweeper sends it, in seconds; 60 when unset. */
  sweepAfterSeconds: 'OUTBOX_SWEEP_AFTER_SECONDS',
  /** Sweeper: how old a pending message is when it counts as stuck, in seconds; 300 when unset. */
  stuckAfterSeconds: 'OUTBOX_STUCK_AFTER_SECONDS',
} as const;

export const DEFAULT_MAX_MESSAGE_BYTES = 262_144;
export const DEFAULT_SWEEP_AFTER_SECONDS = 60;
export const DEFAULT_STUCK_AFTER_SECONDS = 300;

/** What a producer's `new Outbox()` takes from its options, else from the environment. */
export interface ProducerSettings {
  layout: OutboxLayout;
  maxMessageBytes: number;
  pendingShards: number;
}

/**
 * The outbox's table, its key attributes and the message size limit: from `options`, else the
 * environment. The OncelyConfigurationError names every variable to fix.
 */
export function producerSettings(
  options: Partial<OutboxLayout> & { maxMessageBytes?: number; pendingShards?: number },
  environment: Environment = process.env,
): ProducerSettings {
  const read = new EnvironmentReader(environment);
  const settings = {
    layout: layoutOf(read, options),
    maxMessageBytes: options.maxMessageBytes ?? maxMessageBytesOf(read),
    pendingShards: options.pendingShards ?? pendingShardsOf(read),
  };
  read.check(
    "The outbox's environment is incomplete or invalid",
    'OncelyOutbox.grantWrite sets these variables on your function; elsewhere, set them, or give new Outbox() ' +
      'the options they stand for (tableName, partitionKey, sortKey, maxMessageBytes, pendingShards).',
  );
  return settings;
}

/** How many shards of the pending index a producer's markers spread over (DESIGN §9.1). */
export function pendingShardsOf(read: EnvironmentReader): number {
  return read.integer(
    OUTBOX_ENVIRONMENT.pendingShards,
    { min: 1, max: MAX_PENDING_SHARDS },
    DEFAULT_PENDING_SHARDS,
  );
}

/** The table and its key attributes: from `options`, else read from the environment. */
export function layoutOf(read: EnvironmentReader, options: Partial<OutboxLayout> = {}): OutboxLayout {
  return {
    tableName: options.tableName ?? read.required(OUTBOX_ENVIRONMENT.tableName),
    partitionKey:
      options.partitionKey ?? read.optional(OUTBOX_ENVIRONMENT.partitionKey) ?? DEFAULT_PARTITION_KEY,
    sortKey: options.sortKey ?? read.optional(OUTBOX_ENVIRONMENT.sortKey) ?? DEFAULT_SORT_KEY,
  };
}

/** The largest message the queue takes, read from the environment. */
export function maxMessageBytesOf(read: EnvironmentReader): number {
  return read.integer(OUTBOX_ENVIRONMENT.maxMessageBytes, { min: 1_024 }, DEFAULT_MAX_MESSAGE_BYTES);
}

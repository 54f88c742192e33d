import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  type LeaseRecordsStore,
  OncelyConfigurationError,
  type PipelineSettings,
  SANDBOX_CONTEXT,
} from 'oncely/cdk';
import type { IdempotencyMode } from 'oncely/idempotency';

/** Until you point it at your gateway, notifications fail as retryable and end in the DLQ. */
export const PLACEHOLDER_NOTIFICATION_URL = 'https://notifications.invalid/send';

/**
 * Context the shop synthesises with inside `oncely local` (which sets `oncely:sandbox`), unless told
 * otherwise: a `local` stage; a short consumer timeout, so that a failed batch comes back after
 * 6 × 2 s instead of minutes; and 4 concurrent consumer invocations — each a child process on a
 * laptop's few cores, while one invocation already runs 10 message groups at once.
 */
export const SANDBOX_DEFAULTS: Record<string, unknown> = {
  stage: 'local',
  consumerTimeoutSeconds: 2,
  maxConcurrency: 4,
};

export interface ShopSettings {
  stage: string;
  pipeline: PipelineSettings;
  /** Where the consumer POSTs notifications. */
  notificationUrl: string;
  /** `at-most-once` (the default) or `at-least-once`. */
  notificationMode?: IdempotencyMode;
  /** Where the consumer keeps its lease records (the notifications'): `dynamodb` (the default) or `valkey`. */
  leaseRecords: LeaseRecordsStore;
}

/**
 * The shop's settings from CDK context (strings from the command line, or values from cdk.json).
 * A `prod` stage retains its data and turns deletion protection on; other stages are torn down with
 * the stack.
 */
export function shopSettingsFromContext(tryGet: (key: string) => unknown): ShopSettings {
  const sandbox = tryGet(SANDBOX_CONTEXT) !== undefined;
  const get = (key: string) => tryGet(key) ?? (sandbox ? SANDBOX_DEFAULTS[key] : undefined);
  const number = (key: string): number | undefined => {
    const raw = get(key);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!Number.isFinite(value)) {
      throw new OncelyConfigurationError(
        [key],
        `Context value ${key} must be a number, got ${JSON.stringify(raw)}.`,
      );
    }
    return value;
  };
  const duration = (key: string, unit: (n: number) => Duration) => {
    const value = number(key);
    return value === undefined ? undefined : unit(value);
  };
  const mode = get('notificationMode');
  if (mode !== undefined && mode !== 'at-most-once' && mode !== 'at-least-once') {
    throw new OncelyConfigurationError(
      ['notificationMode'],
      `Context value notificationMode must be at-most-once or at-least-once, got ${JSON.stringify(mode)}.`,
    );
  }
  const queueType = get('queueType') ?? 'fifo';
  if (queueType !== 'fifo' && queueType !== 'standard') {
    throw new OncelyConfigurationError(
      ['queueType'],
      `Context value queueType must be fifo or standard, got ${JSON.stringify(queueType)}.`,
    );
  }
  const leaseRecords = get('leaseRecords') ?? 'dynamodb';
  if (leaseRecords !== 'dynamodb' && leaseRecords !== 'valkey') {
    throw new OncelyConfigurationError(
      ['leaseRecords'],
      `Context value leaseRecords must be dynamodb or valkey, got ${JSON.stringify(leaseRecords)}.`,
    );
  }
  const stage = String(get('stage') ?? 'dev');
  const production = stage === 'prod';
  return {
    stage,
    notificationUrl: String(get('notificationUrl') ?? PLACEHOLDER_NOTIFICATION_URL),
    notificationMode: mode,
    leaseRecords,
    pipeline: {
      queueType,
      maxReceiveCount: number('maxReceiveCount'),
      maxAttempts: number('maxAttempts'),
      consumerTimeout: duration('consumerTimeoutSeconds', Duration.seconds),
      consumerMemoryMiB: number('consumerMemoryMiB'),
      batchSize: number('batchSize'),
      maxConcurrency: number('maxConcurrency'),
      maxConcurrentGroups: number('maxConcurrentGroups'),
      queueRetention: duration('queueRetentionDays', Duration.days),
      dlqRetention: duration('dlqRetentionDays', Duration.days),
      idempotencyTtl: duration('idempotencyTtlDays', Duration.days),
      maxMessageSizeBytes: number('maxMessageSizeBytes'),
      unresolvedCheckInterval: duration('unresolvedCheckIntervalMinutes', Duration.minutes),
      removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      deletionProtection: production,
    },
  };
}

import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { KnownKeys } from '../../lambdas/common/known-keys.js';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_CONCURRENT_RECORDS } from '../../lambdas/consumer/environment.js';
import { heldCopyReceives } from './held-copy-receives.js';

/**
 * The kind of SQS queue the pipeline reads (DESIGN §5.1). A fair queue is a standard queue whose
 * publishers send a `MessageGroupId` (the tenant): SQS has no queue setting for it, so it is
 * `'standard'` too.
 */
export type PipelineQueueType = 'fifo' | 'standard';

/** What a user can tune on the pipeline; every field has a documented default. */
export interface PipelineSettings {
  /**
   * The queue and its DLQ: FIFO (order per message group, SQS's deduplication; the consumer uses
   * `fifoBatch`) or standard (no order, no deduplication, batches up to 10,000 records, fair when
   * publishers send a group; the consumer uses `standardBatch`). Choose it before the first deploy:
   * changing it on a deployed pipeline replaces both queues, and what they hold is left behind in
   * the old ones (docs/construct.md says how to move).
   * @default 'fifo'
   */
  readonly queueType?: PipelineQueueType;
  /**
   * Deliveries before SQS moves a message to the DLQ: a backstop (DESIGN §5, §5.1). The consumer
   * sends a record to the DLQ itself after `maxAttempts` failed runs of its own. On FIFO a record
   * can wait behind a batch's worth of such records, so less than `maxAttempts` × `batchSize` is
   * refused. On a standard queue nothing waits behind a failure, but a copy whose key another
   * invocation holds comes back meanwhile, so less than `maxAttempts` + its returns while the key is
   * held for `consumerTimeout` is refused.
   * @default FIFO: `maxAttempts` × `batchSize` (50); standard: `maxAttempts` + 15 (20)
   */
  readonly maxReceiveCount?: number;
  /**
   * A record's own failed runs after which the consumer sends it to the DLQ, in its group
   * (`FifoBatchOptions.maxAttempts`, set through `MAX_ATTEMPTS`).
   * @default 5
   */
  readonly maxAttempts?: number;
  /**
   * Consumer Lambda timeout.
   * @default Duration.seconds(30)
   */
  readonly consumerTimeout?: Duration;
  /**
   * Consumer Lambda memory.
   * @default 512
   */
  readonly consumerMemoryMiB?: number;
  /**
   * Records per consumer invocation (FIFO: at most 10; standard: at most 10,000, more than 10
   * only with a `maxBatchingWindow`).
   * @default 10
   */
  readonly batchSize?: number;
  /**
   * Standard queues only: how long the event source gathers records before it invokes the consumer
   * with fewer than `batchSize` (whole seconds, at most 5 minutes). Required by Lambda for a
   * `batchSize` over 10.
   * @default none: the consumer is invoked with the records one poll returns
   */
  readonly maxBatchingWindow?: Duration;
  /**
   * Concurrent consumer invocations the event source may run (2–1000).
   * @default 10
   */
  readonly maxConcurrency?: number;
  /**
   * FIFO only: message groups one consumer invocation processes concurrently (`MAX_CONCURRENT_GROUPS`).
   * @default 10
   */
  readonly maxConcurrentGroups?: number;
  /**
   * Standard queues only: records one consumer invocation processes concurrently
   * (`MAX_CONCURRENT_RECORDS`), never more than its batch has.
   * @default 100
   */
  readonly maxConcurrentRecords?: number;
  /**
   * Queue visibility timeout; at least 6 × the consumer timeout + `maxBatchingWindow`: Lambda's
   * poller holds a received message for up to the window before the invocation (and its timeout)
   * starts.
   * @default 6 × `consumerTimeout` + `maxBatchingWindow`
   */
  readonly visibilityTimeout?: Duration;
  /**
   * How long the queue keeps a message.
   * @default Duration.days(4)
   */
  readonly queueRetention?: Duration;
  /**
   * How long the DLQ keeps a message (time to inspect and redrive). On a standard queue it must be
   * longer than `queueRetention`: SQS keeps a message's first enqueue time when it moves it to a
   * standard DLQ, so a message it moves stays there `dlqRetention` less its age on the queue.
   * @default Duration.days(14)
   */
  readonly dlqRetention?: Duration;
  /**
   * Lifetime of an idempotency record. It must outlive queue + DLQ retention, or a redriven
   * message would be taken for new.
   * @default `queueRetention` + `dlqRetention` + 1 day
   */
  readonly idempotencyTtl?: Duration;
  /**
   * The largest message body, in bytes (SQS allows 1 KiB–1 MiB).
   * @default 262_144 (256 KiB)
   */
  readonly maxMessageSizeBytes?: number;
  /**
   * Alarm when the oldest message waits longer than this.
   * @default Duration.minutes(5)
   */
  readonly oldestMessageAgeThreshold?: Duration;
  /**
   * How often the monitor counts the unresolved (IN_DOUBT, RETRY_PENDING) records; also the
   * period of the in-doubt alarm. Whole minutes, from 1 minute to 8 hours.
   * @default Duration.minutes(5)
   */
  readonly unresolvedCheckInterval?: Duration;
  /**
   * Tables and queues on stack deletion.
   * @default RemovalPolicy.RETAIN: deleting a stack never deletes data
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * DynamoDB deletion protection.
   * @default false
   */
  readonly deletionProtection?: boolean;
}

export const PIPELINE_SETTINGS_KEYS = {
  queueType: true,
  maxReceiveCount: true,
  maxAttempts: true,
  consumerTimeout: true,
  consumerMemoryMiB: true,
  batchSize: true,
  maxBatchingWindow: true,
  maxConcurrency: true,
  maxConcurrentGroups: true,
  maxConcurrentRecords: true,
  visibilityTimeout: true,
  queueRetention: true,
  dlqRetention: true,
  idempotencyTtl: true,
  maxMessageSizeBytes: true,
  oldestMessageAgeThreshold: true,
  unresolvedCheckInterval: true,
  removalPolicy: true,
  deletionProtection: true,
} satisfies KnownKeys<PipelineSettings>;

/**
 * `PipelineSettings` with every default filled in: what `OncelyPipeline.settings` holds. Only
 * `maxBatchingWindow` has no default value; the other queue type's settings hold their defaults,
 * unused.
 */
export type ResolvedSettings = Required<Omit<PipelineSettings, 'maxBatchingWindow'>> &
  Pick<PipelineSettings, 'maxBatchingWindow'>;

const FIFO_MAX_BATCH_SIZE = 10;
/** Lambda's largest batch from a standard queue. */
const STANDARD_MAX_BATCH_SIZE = 10_000;
/** Lambda's longest batching window. */
const MAX_BATCHING_WINDOW_SECONDS = 300;
/**
 * A standard queue's backstop above `maxAttempts`: the returns of a copy whose key is held for 15
 * minutes (Lambda's longest timeout: 13 with the consumer's default delays), and two deferrals at
 * the deadline (DESIGN §5.1).
 */
const STANDARD_RECEIVE_MARGIN = 15;
/** The queue's visibility timeout is at least this many times the consumer's timeout. */
export const VISIBILITY_TIMEOUT_FACTOR = 6;
/**
 * The longest check interval: the monitor-silent alarm looks back over
 * {@link MONITOR_SILENT_INTERVALS} intervals, and CloudWatch evaluates at most one day.
 */
const MAX_UNRESOLVED_CHECK_INTERVAL = Duration.hours(8);
/** Consecutive check intervals without a count before the monitor counts as silent. */
export const MONITOR_SILENT_INTERVALS = 3;

/**
 * The shortest visibility timeout that outlasts a batch: Lambda's poller receives a message (its
 * visibility starts) and may hold it for the batching window before the invocation starts, and AWS
 * asks for 6 × the function's timeout from there.
 */
export function minimumVisibilitySeconds(consumerTimeout: Duration, maxBatchingWindow?: Duration): number {
  // In milliseconds: a window that is not whole seconds is refused below, not here.
  const windowSeconds = Math.ceil((maxBatchingWindow?.toMilliseconds() ?? 0) / 1000);
  return consumerTimeout.toSeconds() * VISIBILITY_TIMEOUT_FACTOR + windowSeconds;
}

/** Fills in the defaults; {@link pipelineSettingsProblems} then says what cannot work. */
export function resolveSettings(settings: PipelineSettings = {}): ResolvedSettings {
  const consumerTimeout = settings.consumerTimeout ?? Duration.seconds(30);
  const queueRetention = settings.queueRetention ?? Duration.days(4);
  const dlqRetention = settings.dlqRetention ?? Duration.days(14);
  const retentionSeconds = queueRetention.toSeconds() + dlqRetention.toSeconds();
  const maxAttempts = settings.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const batchSize = settings.batchSize ?? FIFO_MAX_BATCH_SIZE;
  const queueType = settings.queueType ?? 'fifo';
  return {
    queueType,
    maxReceiveCount:
      settings.maxReceiveCount ??
      (queueType === 'fifo' ? maxAttempts * batchSize : maxAttempts + STANDARD_RECEIVE_MARGIN),
    maxAttempts,
    consumerTimeout,
    consumerMemoryMiB: settings.consumerMemoryMiB ?? 512,
    batchSize,
    maxConcurrency: settings.maxConcurrency ?? 10,
    maxBatchingWindow: settings.maxBatchingWindow,
    maxConcurrentGroups: settings.maxConcurrentGroups ?? 10,
    maxConcurrentRecords: settings.maxConcurrentRecords ?? DEFAULT_MAX_CONCURRENT_RECORDS,
    visibilityTimeout:
      settings.visibilityTimeout ??
      Duration.seconds(minimumVisibilitySeconds(consumerTimeout, settings.maxBatchingWindow)),
    queueRetention,
    dlqRetention,
    idempotencyTtl:
      settings.idempotencyTtl ?? Duration.seconds(retentionSeconds + Duration.days(1).toSeconds()),
    maxMessageSizeBytes: settings.maxMessageSizeBytes ?? 256 * 1024,
    oldestMessageAgeThreshold: settings.oldestMessageAgeThreshold ?? Duration.minutes(5),
    unresolvedCheckInterval: settings.unresolvedCheckInterval ?? Duration.minutes(5),
    removalPolicy: settings.removalPolicy ?? RemovalPolicy.RETAIN,
    deletionProtection: settings.deletionProtection ?? false,
  };
}

/**
 * Every resolved setting that would break exactly-once delivery or cannot deploy, each with what
 * to do; empty when all can. `given` tells a setting set for the other queue type from a default.
 */
export function pipelineSettingsProblems(s: ResolvedSettings, given: PipelineSettings = {}): string[] {
  const problems: string[] = [];
  const retention = s.queueRetention.toSeconds() + s.dlqRetention.toSeconds();
  if (s.idempotencyTtl.toSeconds() < retention) {
    problems.push(
      `idempotencyTtl (${s.idempotencyTtl.toHumanString()}) is shorter than queueRetention + dlqRetention ` +
        `(${s.queueRetention.toHumanString()} + ${s.dlqRetention.toHumanString()}): a message redriven after its ` +
        'record expired would run its effect again. Raise idempotencyTtl or shorten the retentions.',
    );
  }
  problems.push(...visibilityProblems(s));
  if (s.queueType !== 'fifo' && s.queueType !== 'standard') {
    problems.push(`queueType (${String(s.queueType)}) must be 'fifo' or 'standard'.`);
  }
  problems.push(...(s.queueType === 'standard' ? standardProblems(s, given) : fifoProblems(s, given)));
  if (!Number.isInteger(s.maxReceiveCount) || s.maxReceiveCount < 1 || s.maxReceiveCount > 1000) {
    problems.push(`maxReceiveCount (${s.maxReceiveCount}) must be a whole number from 1 to 1000.`);
  }
  if (!Number.isInteger(s.maxAttempts) || s.maxAttempts < 1) {
    problems.push(`maxAttempts (${s.maxAttempts}) must be a whole number of at least 1.`);
  }
  if (!Number.isInteger(s.maxConcurrency) || s.maxConcurrency < 2 || s.maxConcurrency > 1000) {
    problems.push(`maxConcurrency (${s.maxConcurrency}) must be a whole number from 2 to 1000.`);
  }
  if (s.maxMessageSizeBytes < 1024 || s.maxMessageSizeBytes > 1024 * 1024) {
    problems.push(`maxMessageSizeBytes (${s.maxMessageSizeBytes}) must be from 1024 to 1048576 bytes.`);
  }
  const intervalMs = s.unresolvedCheckInterval.toMilliseconds();
  if (
    intervalMs % 60_000 !== 0 ||
    intervalMs < 60_000 ||
    intervalMs > MAX_UNRESOLVED_CHECK_INTERVAL.toMilliseconds()
  ) {
    problems.push(
      `unresolvedCheckInterval (${s.unresolvedCheckInterval.toHumanString()}) must be a whole number of minutes ` +
        'from 1 minute to 8 hours: EventBridge schedules by the minute, and the monitor-silent alarm looks back ' +
        `${MONITOR_SILENT_INTERVALS} intervals, within CloudWatch's one-day limit.`,
    );
  }
  for (const [name, value] of [
    ['queueRetention', s.queueRetention],
    ['dlqRetention', s.dlqRetention],
  ] as const) {
    if (value.toSeconds() < 60 || value.toSeconds() > Duration.days(14).toSeconds()) {
      problems.push(`${name} (${value.toHumanString()}) must be from 1 minute to 14 days (SQS's limits).`);
    }
  }
  return problems;
}

/** A visibility timeout shorter than a batch's life: a message reappears while its batch is still on it. */
function visibilityProblems(s: ResolvedSettings): string[] {
  const minimum = minimumVisibilitySeconds(s.consumerTimeout, s.maxBatchingWindow);
  if (s.visibilityTimeout.toSeconds() >= minimum) return [];
  const window = s.maxBatchingWindow
    ? ` + maxBatchingWindow (${s.maxBatchingWindow.toHumanString()}, which the poller may hold a message before invoking)`
    : '';
  return [
    `visibilityTimeout (${s.visibilityTimeout.toSeconds()} seconds) must be at least ${VISIBILITY_TIMEOUT_FACTOR} × ` +
      `consumerTimeout (${s.consumerTimeout.toSeconds()} seconds)${window} = ${minimum} seconds, as AWS advises ` +
      'for SQS event sources: otherwise a message can become visible again while an invocation still works on it.',
  ];
}

/** The FIFO queue's own limits, and the standard queue's settings refused on it. */
function fifoProblems(s: ResolvedSettings, given: PipelineSettings): string[] {
  const problems = refusedSettings(given, ['maxConcurrentRecords', 'maxBatchingWindow'], 'fifo');
  if (!Number.isInteger(s.batchSize) || s.batchSize < 1 || s.batchSize > FIFO_MAX_BATCH_SIZE) {
    problems.push(`batchSize (${s.batchSize}) must be a whole number from 1 to 10 for a FIFO queue.`);
  }
  if (!Number.isInteger(s.maxConcurrentGroups) || s.maxConcurrentGroups < 1) {
    problems.push(`maxConcurrentGroups (${s.maxConcurrentGroups}) must be a whole number of at least 1.`);
  }
  if (
    Number.isInteger(s.maxAttempts) &&
    s.maxAttempts >= 1 &&
    s.maxReceiveCount < s.maxAttempts * s.batchSize
  ) {
    problems.push(
      `maxReceiveCount (${s.maxReceiveCount}) must be at least maxAttempts × batchSize (${s.maxAttempts} × ` +
        `${s.batchSize} = ${s.maxAttempts * s.batchSize}): a record can wait behind ${s.batchSize - 1} records of its ` +
        `group that each fail ${s.maxAttempts} times before the consumer dead-letters them, and SQS would move it to ` +
        'the DLQ with them though it never failed. Raise maxReceiveCount, or lower maxAttempts.',
    );
  }
  return problems;
}

/** The standard queue's own limits (DESIGN §5.1), and the FIFO queue's settings refused on it. */
function standardProblems(s: ResolvedSettings, given: PipelineSettings): string[] {
  const problems = refusedSettings(given, ['maxConcurrentGroups'], 'standard');
  if (!Number.isInteger(s.batchSize) || s.batchSize < 1 || s.batchSize > STANDARD_MAX_BATCH_SIZE) {
    problems.push(`batchSize (${s.batchSize}) must be a whole number from 1 to 10000 for a standard queue.`);
  } else if (s.batchSize > FIFO_MAX_BATCH_SIZE && s.maxBatchingWindow === undefined) {
    problems.push(
      `batchSize (${s.batchSize}) over 10 needs a maxBatchingWindow (Lambda requires one): say how long the ` +
        'event source may gather records, e.g. Duration.seconds(1).',
    );
  }
  const window = s.maxBatchingWindow?.toMilliseconds();
  if (window !== undefined && (window % 1000 !== 0 || window > MAX_BATCHING_WINDOW_SECONDS * 1000)) {
    problems.push(
      `maxBatchingWindow (${s.maxBatchingWindow?.toHumanString()}) must be a whole number of seconds up to 5 minutes.`,
    );
  }
  if (!Number.isInteger(s.maxConcurrentRecords) || s.maxConcurrentRecords < 1) {
    problems.push(`maxConcurrentRecords (${s.maxConcurrentRecords}) must be a whole number of at least 1.`);
  }
  if (s.dlqRetention.toSeconds() <= s.queueRetention.toSeconds()) {
    problems.push(
      `dlqRetention (${s.dlqRetention.toHumanString()}) must be longer than queueRetention ` +
        `(${s.queueRetention.toHumanString()}) on a standard queue: SQS keeps a message's first enqueue time when ` +
        'it moves it to a standard DLQ, so a message older than dlqRetention would be deleted as it arrives. ' +
        'Lengthen dlqRetention or shorten queueRetention.',
    );
  }
  const held = heldCopyReceives(s.consumerTimeout.toSeconds());
  if (Number.isInteger(s.maxAttempts) && s.maxAttempts >= 1 && s.maxReceiveCount < s.maxAttempts + held) {
    problems.push(
      `maxReceiveCount (${s.maxReceiveCount}) must be at least maxAttempts + ${held} (${s.maxAttempts + held}): a ` +
        `copy whose key another invocation holds for up to consumerTimeout (${s.consumerTimeout.toHumanString()}) ` +
        `is delivered up to ${held} times meanwhile, then runs up to ${s.maxAttempts} times before the consumer ` +
        'dead-letters it, and SQS would move it to the DLQ before. Raise maxReceiveCount, or lower maxAttempts.',
    );
  }
  return problems;
}

/** The settings of `names` that were given, refused on a `queueType` queue, each with why. */
function refusedSettings(
  given: PipelineSettings,
  names: readonly (keyof PipelineSettings)[],
  queueType: PipelineQueueType,
): string[] {
  const other = queueType === 'fifo' ? "queueType: 'standard'" : "queueType: 'fifo' (the default)";
  return names
    .filter((name) => given[name] !== undefined)
    .map((name) => `${name} applies only with ${other}: remove it, or set that queueType.`);
}

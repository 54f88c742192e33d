import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { KnownKeys } from '../../lambdas/common/known-keys.js';
import { DEFAULT_PENDING_SHARDS, MAX_PENDING_SHARDS } from '../../lambdas/outbox/layout.js';

/** What a user can tune on the outbox: its rate and age bounds; every field has a documented default. */
export interface OutboxSettings {
  /**
   * How often the sweeper runs; also the period of the stuck alarm. Whole minutes, from 1 minute
   * (EventBridge's shortest rate) to 12 hours.
   * @default Duration.minutes(1)
   */
  readonly sweepInterval?: Duration;
  /**
   * How old a pending message must be before the sweeper sends it: the relay's head start. Whole
   * seconds.
   * @default Duration.seconds(60); Duration.seconds(10) when synthesised by `oncely local`
   */
  readonly sweepAfter?: Duration;
  /**
   * How old a pending message is when it counts as stuck, which raises the `StuckMessages` alarm.
   * Whole seconds, longer than `sweepAfter`.
   * @default Duration.minutes(5); Duration.seconds(30) when synthesised by `oncely local`
   */
  readonly stuckAfter?: Duration;
  /**
   * Stream records per relay invocation (1–10,000).
   * @default 100
   */
  readonly relayBatchSize?: number;
  /**
   * Retries of a relay batch that failed (0–10,000) before Lambda gives up on it and sends its
   * description to the relay's failure queue; the sweeper then sends what is still pending.
   * @default 10
   */
  readonly relayRetryAttempts?: number;
  /**
   * Relay batches of one stream shard processed at once (1–10, the event source's
   * ParallelizationFactor): more when one shard's batches lag at a high rate. Safe for order: a
   * group's messages are sent from its own partition under claims, whatever batch names it.
   * @default 1
   */
  readonly relayParallelization?: number;
  /**
   * How many shards of the pending index the producers' markers spread over (1–32), each about 500
   * messages a second: the producers' `OUTBOX_PENDING_SHARDS`, set by `grantWrite`. The relay and
   * the sweeper read every shard whatever it is, so changing it on a live outbox loses and reorders
   * nothing (DESIGN §9.1).
   * @default 8
   */
  readonly pendingShards?: number;
  /**
   * The outbox table (when the construct creates it), the failure queue and the log groups on stack
   * deletion.
   * @default the pipeline's `removalPolicy` when `pipeline` is given, else RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * DynamoDB deletion protection on the outbox table, when the construct creates it.
   * @default the pipeline's `deletionProtection` when `pipeline` is given, else false
   */
  readonly deletionProtection?: boolean;
}

export const OUTBOX_SETTINGS_KEYS = {
  sweepInterval: true,
  sweepAfter: true,
  stuckAfter: true,
  relayBatchSize: true,
  relayRetryAttempts: true,
  relayParallelization: true,
  pendingShards: true,
  removalPolicy: true,
  deletionProtection: true,
} satisfies KnownKeys<OutboxSettings>;

/** `OutboxSettings` with every default filled in: what `OncelyOutbox.settings` holds. */
export type ResolvedOutboxSettings = Required<OutboxSettings>;

/** Defaults that depend on where the outbox is: in `oncely local`, or beside a pipeline. */
export interface OutboxDefaults {
  sandbox: boolean;
  removalPolicy?: RemovalPolicy;
  deletionProtection?: boolean;
}

/** EventBridge's shortest rate. */
const MIN_SWEEP_INTERVAL = Duration.minutes(1);
/** The stuck alarm looks back two intervals, within CloudWatch's one-day limit. */
const MAX_SWEEP_INTERVAL = Duration.hours(12);

/** Fills in the defaults; {@link outboxSettingsProblems} then says what cannot work. */
export function resolveOutboxSettings(
  settings: OutboxSettings,
  defaults: OutboxDefaults,
): ResolvedOutboxSettings {
  return {
    sweepInterval: settings.sweepInterval ?? MIN_SWEEP_INTERVAL,
    // Locally there is no reason to wait: the demo shows the sweeper sending what the relay missed.
    // In the sandbox the relay shares a laptop's few cores with everything else: its lag at a peak
    // passes 5 s, and a sweeper that starts then races a healthy relay.
    sweepAfter: settings.sweepAfter ?? Duration.seconds(defaults.sandbox ? 10 : 60),
    stuckAfter: settings.stuckAfter ?? (defaults.sandbox ? Duration.seconds(30) : Duration.minutes(5)),
    relayBatchSize: settings.relayBatchSize ?? 100,
    relayRetryAttempts: settings.relayRetryAttempts ?? 10,
    relayParallelization: settings.relayParallelization ?? 1,
    pendingShards: settings.pendingShards ?? DEFAULT_PENDING_SHARDS,
    removalPolicy: settings.removalPolicy ?? defaults.removalPolicy ?? RemovalPolicy.RETAIN,
    deletionProtection: settings.deletionProtection ?? defaults.deletionProtection ?? false,
  };
}

/** Every resolved setting that cannot work, each with what to do; empty when all can. */
export function outboxSettingsProblems(s: ResolvedOutboxSettings): string[] {
  const problems: string[] = [];
  const intervalMs = s.sweepInterval.toMilliseconds();
  if (
    intervalMs % 60_000 !== 0 ||
    intervalMs < MIN_SWEEP_INTERVAL.toMilliseconds() ||
    intervalMs > MAX_SWEEP_INTERVAL.toMilliseconds()
  ) {
    problems.push(
      `sweepInterval (${s.sweepInterval.toHumanString()}) must be a whole number of minutes from 1 minute to ` +
        '12 hours: EventBridge schedules by the minute, and the stuck alarm looks back two intervals, within ' +
        "CloudWatch's one-day limit.",
    );
  }
  for (const [name, value] of [
    ['sweepAfter', s.sweepAfter],
    ['stuckAfter', s.stuckAfter],
  ] as const) {
    if (value.toMilliseconds() % 1000 !== 0) {
      problems.push(`${name} (${value.toHumanString()}) must be a whole number of seconds.`);
    }
  }
  if (s.stuckAfter.toMilliseconds() <= s.sweepAfter.toMilliseconds()) {
    problems.push(
      `stuckAfter (${s.stuckAfter.toHumanString()}) must be longer than sweepAfter ` +
        `(${s.sweepAfter.toHumanString()}): a message the sweeper has not yet tried to send is not stuck.`,
    );
  }
  if (!Number.isInteger(s.relayBatchSize) || s.relayBatchSize < 1 || s.relayBatchSize > 10_000) {
    problems.push(`relayBatchSize (${s.relayBatchSize}) must be a whole number from 1 to 10000.`);
  }
  if (!Number.isInteger(s.relayRetryAttempts) || s.relayRetryAttempts < 0 || s.relayRetryAttempts > 10_000) {
    problems.push(
      `relayRetryAttempts (${s.relayRetryAttempts}) must be a whole number from 0 to 10000: bounded, so a ` +
        'failing batch does not hold up its stream shard for a day (the sweeper sends what it leaves).',
    );
  }
  if (
    !Number.isInteger(s.relayParallelization) ||
    s.relayParallelization < 1 ||
    s.relayParallelization > 10
  ) {
    problems.push(
      `relayParallelization (${s.relayParallelization}) must be a whole number from 1 to 10: Lambda's ` +
        'ParallelizationFactor for a stream shard.',
    );
  }
  if (!Number.isInteger(s.pendingShards) || s.pendingShards < 1 || s.pendingShards > MAX_PENDING_SHARDS) {
    problems.push(
      `pendingShards (${s.pendingShards}) must be a whole number from 1 to ${MAX_PENDING_SHARDS}: the shards ` +
        'of the pending index the relay and the sweeper read.',
    );
  }
  return problems;
}

import type { KnownKeys } from '../common/known-keys.js';
import type { StoredError } from '../idempotency/errors.js';
import type { ConsumerMessage } from './message.js';

/** What a hook is told about a record. */
export interface RecordHookEvent {
  /** The record's message. */
  message: ConsumerMessage;
  /** `namespace#key`: the id of the record's idempotency record. */
  idempotencyKey: string;
}

/** What `onInDoubt` is told: the record, and why its effect's outcome is unknown. */
export interface InDoubtHookEvent extends RecordHookEvent {
  /** The error that left the outcome unknown, as the record stores it. */
  reason: StoredError;
}

/**
 * Functions a consumer calls at a record's turning points, for your logs or metrics (DESIGN
 * §5.1). Each is called once per event, with the record's message. The consumer neither awaits
 * them nor lets them change a record's verdict: what one throws (or rejects with) is logged.
 */
export interface ConsumerHooks {
  /**
   * A lease-mode record took its key's lease and its effect is about to run. A transactional record
   * claims its key in the commit that is its effect: it has no claim before it.
   * @default none
   */
  onClaim?(event: RecordHookEvent): unknown;
  /**
   * A record was a duplicate of a completed one: acknowledged without running.
   * @default none
   */
  onDuplicate?(event: RecordHookEvent): unknown;
  /**
   * A record's effect ran now and its record says COMPLETED.
   * @default none
   */
  onComplete?(event: RecordHookEvent): unknown;
  /**
   * A record became IN_DOUBT (at-most-once): an operator must resolve it. Once, when it becomes so;
   * later deliveries of it are acknowledged without a call.
   * @default none
   */
  onInDoubt?(event: InDoubtHookEvent): unknown;
}

export const CONSUMER_HOOK_KEYS = {
  onClaim: true,
  onDuplicate: true,
  onComplete: true,
  onInDoubt: true,
} satisfies KnownKeys<ConsumerHooks>;

import fc from 'fast-check';
import type { IdempotencyMode } from '../lambdas/idempotency/lease.js';

/** What goes wrong with the Valkey store in one schedule (DESIGN §3.1). */
export type ValkeyFaultKind = 'lost-answer' | 'restart' | 'failover';
export const VALKEY_FAULT_KINDS: readonly ValkeyFaultKind[] = ['lost-answer', 'restart', 'failover'];

/**
 * A point in the first delivery of the struck key: before its acquire, during its effect (after the
 * acquire, before the completion), or after its completion.
 */
export type RunPoint = 'before-acquire' | 'during-effect' | 'after-completion';

/**
 * One fault on one key of a few, each delivered, then delivered again until acknowledged, then once
 * more as a duplicate (a copy of the message).
 * - `lost-answer`: the reply to the struck key's acquire or completion is lost, the client sends
 *   the script again.
 * - `restart`: one node, persistence by snapshot: `SAVE` at `from`, kill -9 and restart from it at
 *   `to`; what was written in between is gone.
 * - `failover`: a primary and a replica: the replica is cut off at `from` (it keeps what it had) and
 *   promoted at `to`; what the primary took in between is gone.
 */
export interface ValkeySchedule {
  /** Each key's mode, in delivery order. */
  keys: IdempotencyMode[];
  /** The key the fault meets. */
  struck: number;
  fault:
    | { kind: 'lost-answer'; step: 'acquire' | 'complete' }
    | { kind: 'restart' | 'failover'; from: RunPoint; to: RunPoint };
}

const POINTS: readonly RunPoint[] = ['before-acquire', 'during-effect', 'after-completion'];

/** A window `from` → `to` of the struck key's first delivery, `to` at or after `from`. */
const lossWindow = fc
  .tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 2 }))
  .map(([a, b]) => ({ from: POINTS[Math.min(a, b)] as RunPoint, to: POINTS[Math.max(a, b)] as RunPoint }));

export const valkeyScheduleArbitrary: fc.Arbitrary<ValkeySchedule> = fc
  .array(fc.constantFrom<IdempotencyMode>('at-least-once', 'at-most-once'), { minLength: 1, maxLength: 4 })
  .chain((keys) =>
    fc.record({
      keys: fc.constant(keys),
      struck: fc.integer({ min: 0, max: keys.length - 1 }),
      fault: fc.oneof(
        fc.record({
          kind: fc.constant('lost-answer' as const),
          step: fc.constantFrom('acquire' as const, 'complete' as const),
        }),
        lossWindow.map((window) => ({ kind: 'restart' as const, ...window })),
        lossWindow.map((window) => ({ kind: 'failover' as const, ...window })),
      ),
    }),
  );

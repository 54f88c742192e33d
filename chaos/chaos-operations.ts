import { z } from 'zod';
import { type ConsumerOperation, leaseOperation, transactionalOperation } from '../lambdas/consumer/index.js';
import { NonRetryableError, OutcomeUnknownError } from '../lambdas/idempotency/index.js';
import type { EffectLedger } from './effect-ledger.js';
import type { Behaviour } from './schedule.js';

/** The message types of the schedules, one per way of making an effect idempotent. */
export const CHAOS_TYPES = {
  transactional: 'ChaosTransactional',
  'at-most-once': 'ChaosAtMostOnce',
  'at-least-once': 'ChaosAtLeastOnce',
} as const;

/** The namespaces of their records. */
export const CHAOS_NAMESPACES = {
  transactional: 'chaos-tx',
  'at-most-once': 'chaos-amo',
  'at-least-once': 'chaos-alo',
} as const;

const payloadSchema = z.object({
  key: z.string(),
  group: z.string(),
  behaviour: z.enum(['ok', 'fail-once', 'poison', 'unknown-once']),
});

export type ChaosPayload = z.infer<typeof payloadSchema>;

/** What a container's operations need from the harness. */
export interface ChaosEffects {
  ledger: EffectLedger;
  /** The table the transactional effects append to: one item per group, a list of keys. */
  effectsTable: string;
  /** Resolves while the container lives; never resolves once it died (a dead process does nothing). */
  alive(): Promise<void>;
  /** Whether the invocation should die inside this key's effect, after applying it. */
  crashesInsideEffect(key: string): boolean;
  /** Called inside an at-most-once effect, after applying it: a planned batch abort happens here. */
  atMostOnceApplied(key: string): Promise<void>;
  /** Kills the container: never resolves. */
  die(): Promise<never>;
}

/** A permanent refusal that the effect's owner decided on. */
export class ChaosPoisonError extends NonRetryableError {
  static override readonly errorName: string = 'ChaosPoisonError';
}

/** The one-off retryable failure of `fail-once`: nothing was applied. */
export class ChaosTransientError extends Error {
  override readonly name = 'ChaosTransientError';
}

/** The three operations, built per container (their caches of completed keys live with it). */
export function chaosOperations(effects: ChaosEffects): Record<string, ConsumerOperation> {
  const leaseEffect =
    (mode: 'at-most-once' | 'at-least-once') =>
    async ({ payload }: { payload: ChaosPayload }) => {
      await effects.alive();
      effects.ledger.start(payload.key);
      failFirst(payload.behaviour, payload.key, effects);
      effects.ledger.apply(payload.key, payload.group);
      if (effects.crashesInsideEffect(payload.key)) await effects.die();
      if (mode === 'at-most-once') await effects.atMostOnceApplied(payload.key);
      if (payload.behaviour === 'unknown-once' && effects.ledger.firstTime(payload.key)) {
        throw new OutcomeUnknownError('the effect was applied, then its answer was lost');
      }
      return { applied: payload.key };
    };
  return {
    [CHAOS_TYPES.transactional]: transactionalOperation({
      namespace: CHAOS_NAMESPACES.transactional,
      payload: payloadSchema,
      plan: ({ payload }) => {
        effects.ledger.start(payload.key);
        failFirst(payload.behaviour, payload.key, effects);
        return {
          writes: [
            {
              Update: {
                TableName: effects.effectsTable,
                Key: { id: payload.group },
                UpdateExpression: 'SET applied = list_append(if_not_exists(applied, :none), :key)',
                ExpressionAttributeValues: { ':none': [], ':key': [payload.key] },
              },
            },
          ],
        };
      },
    }),
    [CHAOS_TYPES['at-most-once']]: leaseOperation({
      namespace: CHAOS_NAMESPACES['at-most-once'],
      mode: 'at-most-once',
      payload: payloadSchema,
      run: leaseEffect('at-most-once'),
    }),
    [CHAOS_TYPES['at-least-once']]: leaseOperation({
      namespace: CHAOS_NAMESPACES['at-least-once'],
      mode: 'at-least-once',
      payload: payloadSchema,
      run: leaseEffect('at-least-once'),
    }),
  };
}

/** Poison always refuses; fail-once fails its first run, before anything is applied. */
function failFirst(behaviour: Behaviour, key: string, effects: ChaosEffects): void {
  if (behaviour === 'poison') throw new ChaosPoisonError(`${key} is refused for good`);
  if (behaviour === 'fail-once' && effects.ledger.firstTime(key)) {
    throw new ChaosTransientError(`${key} fails its first run`);
  }
}

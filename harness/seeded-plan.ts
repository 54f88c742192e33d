import { type ChaosRequest, type Fault, type FaultPlan, FaultPlanError } from './faults.js';
import { requestFingerprint } from './fingerprint.js';
import { fnv1a32, mulberry32 } from './hash.js';

/** The faults a seeded plan scatters; `hang` is for targeted plans, as it stops its caller for good. */
export type SeededFaultKind =
  | 'fail-before'
  | 'lose-answer'
  | 'throttle'
  | 'delay'
  | 'fail-entry'
  | 'stale-handle';

/**
 * Fixed order in which the rates partition [0, 1): part of what makes a seed reproducible. A kind
 * added goes last, so that the draws of the others stay where they were.
 */
const SEEDED_KINDS: readonly SeededFaultKind[] = [
  'fail-before',
  'lose-answer',
  'throttle',
  'delay',
  'fail-entry',
  'stale-handle',
];

export interface SeededFaultPlanOptions {
  seed: number;
  /** Probability of each fault per request; their sum is at most 1. */
  rates: Partial<Record<SeededFaultKind, number>>;
  /** Only these operations (e.g. `['PutItem', 'UpdateItem']`) get faults; all by default. */
  operations?: readonly string[];
  /** How long a `delay` holds a request; 20 ms by default. */
  delayMs?: number;
}

/**
 * A reproducible random plan: each request's fault depends only on the seed, the request's
 * fingerprint and how many times that fingerprint was seen before — not on how concurrent
 * requests interleave — so a seed that breaks a scenario breaks it again.
 */
export function seededFaultPlan(options: SeededFaultPlanOptions): FaultPlan {
  const draw = faultDraw(options);
  const seen = new Map<string, number>();
  return (request) => {
    if (options.operations && !options.operations.includes(request.operation)) return undefined;
    const fingerprint = requestFingerprint(request);
    const occurrence = (seen.get(fingerprint) ?? 0) + 1;
    seen.set(fingerprint, occurrence);
    const kind = draw(`${fingerprint}\u0000${occurrence}`);
    return kind ? seededFault(kind, request, options.delayMs) : undefined;
  };
}

/**
 * The fault kind (or none) that the seed and `rates` give an identity: the same identity, the same
 * kind, in every run.
 */
export function faultDraw(
  options: Pick<SeededFaultPlanOptions, 'seed' | 'rates'>,
): (identity: string) => SeededFaultKind | undefined {
  const thresholds = cumulativeRates(options.rates);
  return (identity) => {
    const draw = mulberry32(fnv1a32(`${options.seed}\u0000${identity}`))();
    return thresholds.find(({ upTo }) => draw < upTo)?.kind;
  };
}

function cumulativeRates(rates: SeededFaultPlanOptions['rates']) {
  let upTo = 0;
  const thresholds = SEEDED_KINDS.map((kind) => {
    const rate = rates[kind] ?? 0;
    if (!(rate >= 0 && rate <= 1))
      throw new FaultPlanError(`the rate of ${kind} must be in [0, 1], got ${rate}`);
    upTo += rate;
    return { kind, upTo };
  });
  // A small tolerance, so that rates like 0.7 + 0.2 + 0.1 are accepted despite float rounding.
  if (upTo > 1 + 1e-9) throw new FaultPlanError(`fault rates add up to ${upTo}, more than 1`);
  return thresholds;
}

/** The fault of `kind` for `request`, or undefined where the kind does not apply to it (`fail-entry` off a batch send). */
export function seededFault(kind: SeededFaultKind, request: ChaosRequest, delayMs = 20): Fault | undefined {
  if (kind === 'delay') return { kind, ms: delayMs };
  if (kind === 'fail-entry') return entryToFail(request);
  if (kind === 'stale-handle') return handleToSpoil(request);
  return { kind };
}

/** `stale-handle` hits a DeleteMessageBatch or ChangeMessageVisibilityBatch only, at its first entry. */
function handleToSpoil(request: ChaosRequest): Fault | undefined {
  const batch =
    request.operation === 'DeleteMessageBatch' || request.operation === 'ChangeMessageVisibilityBatch';
  const entries = batch ? request.body.Entries : undefined;
  return Array.isArray(entries) && entries.length > 0 ? { kind: 'stale-handle', entry: 0 } : undefined;
}

/**
 * `fail-entry` hits a SendMessageBatch only (other requests go through), at its first entry that a
 * later entry of its group follows: the answer that could reorder a group. Else at its first entry.
 */
function entryToFail(request: ChaosRequest): Fault | undefined {
  const entries = request.operation === 'SendMessageBatch' ? request.body.Entries : undefined;
  if (!Array.isArray(entries) || entries.length === 0) return undefined;
  const groups = entries.map((entry) => (entry as { MessageGroupId?: unknown }).MessageGroupId);
  const followed = groups.findIndex((group, i) => groups.indexOf(group, i + 1) !== -1);
  return { kind: 'fail-entry', entry: Math.max(followed, 0) };
}

import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';

/** A step of lease mode's store (DESIGN §3): one request-making method of the `LeaseStore` seam. */
export type StoreStep = Exclude<keyof LeaseStore, 'kind' | 'ttlSeconds' | 'now'>;

// Every step, so that a step the seam gains is watched too (the type makes a missing one an error).
const STEP_NAMES: Record<StoreStep, true> = {
  acquire: true,
  read: true,
  markStarted: true,
  countRun: true,
  complete: true,
  fail: true,
  reject: true,
  markInDoubt: true,
  parkExpiredLease: true,
  claimInDoubtReport: true,
  release: true,
  releaseWithRetries: true,
  releaseUnstarted: true,
  keepUntil: true,
  claimDeadLetter: true,
  releaseDeadLetterClaim: true,
  markDeadLettered: true,
  logDeadLetter: true,
};

/** Every step of the seam. */
export const STORE_STEPS = Object.keys(STEP_NAMES) as StoreStep[];

/** One call of a step: the record (or DLQ message) it names, and its arguments. */
export interface StepCall {
  step: StoreStep;
  id: string;
  args: unknown[];
}

/** Picks the calls a fault applies to. */
export type StepSelect = (call: StepCall) => boolean;

type Rule = {
  step: StoreStep;
  select: StepSelect;
  /** Before the step is applied; throwing fails it unapplied. */
  before?: (call: StepCall) => Promise<void> | void;
  /** After it was applied; throwing loses its answer. */
  after?: (call: StepCall, result: unknown) => Promise<void> | void;
  /** Answers the call in its stead: it is not applied. */
  instead?: (call: StepCall) => unknown;
};

/**
 * A store whose steps a test watches and faults, whichever store is under it: the faults the
 * consumer must survive (a step refused, a step applied whose answer is lost, a step held) on
 * DynamoDB and Valkey alike. The store's own retries (the SDK's, iovalkey's resend) are below
 * these faults and are its own tests' business (test/idempotency).
 */
export function steppedStore(inner: LeaseStore) {
  const calls: StepCall[] = [];
  const rules: Rule[] = [];
  const store = new Proxy(inner, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (typeof property !== 'string' || !Object.hasOwn(STEP_NAMES, property)) return value.bind(target);
      const step = property as StoreStep;
      return async (...args: unknown[]) => {
        const call: StepCall = { step, id: idOf(step, args), args };
        calls.push(call);
        const applying = rules.filter((rule) => rule.step === step && rule.select(call));
        for (const rule of applying) await rule.before?.(call);
        const answering = applying.find((rule) => rule.instead);
        if (answering?.instead) return answering.instead(call);
        const result = await value.apply(target, args);
        for (const rule of applying) await rule.after?.(call, result);
        return result;
      };
    },
  });
  return {
    store,
    calls,
    /** How many calls of `step` (matching `select`) the store was asked for. */
    count: (step: StoreStep, select: StepSelect = () => true) =>
      calls.filter((call) => call.step === step && select(call)).length,
    /** Fails the chosen calls before they are applied; `stop` ends it. */
    fail(step: StoreStep, select: StepSelect = () => true, error = () => new Error('injected failure')) {
      let active = true;
      let failures = 0;
      rules.push({
        step,
        select: (call) => active && select(call),
        before: () => {
          failures++;
          throw error();
        },
      });
      return {
        get failures() {
          return failures;
        },
        stop: () => {
          active = false;
        },
      };
    },
    /** Applies the chosen calls (at most `times`), then throws as if their answer was lost on the way back. */
    loseAnswers(step: StoreStep, select: StepSelect = () => true, times = 1) {
      let lost = 0;
      rules.push({
        step,
        select: (call) => lost < times && select(call),
        after: () => {
          lost++;
          throw Object.assign(new Error('injected: the answer was lost after the step was applied'), {
            name: 'TimeoutError',
          });
        },
      });
      return {
        get lost() {
          return lost;
        },
      };
    },
    /**
     * Holds the chosen calls until `release` resolves, before they are applied; a function is called
     * for each such call, for a hold of its own (a step that takes its time).
     */
    hold(step: StoreStep, select: StepSelect, release: Promise<void> | ((call: StepCall) => Promise<void>)) {
      rules.push({
        step,
        select,
        before: (call) => (typeof release === 'function' ? release(call) : release),
      });
    },
    /** Holds the chosen calls' answers until `release` resolves, after they were applied. */
    holdAnswers(step: StoreStep, select: StepSelect, release: Promise<void>) {
      rules.push({ step, select, after: () => release });
    },
    /**
     * Calls `before` as each chosen call is asked for, and `after` with its answer once it was applied
     * and answered (not when it failed, nor when a fault registered before this watch lost its answer).
     */
    watch(
      step: StoreStep,
      select: StepSelect,
      watcher: { before?: (call: StepCall) => void; after?: (call: StepCall, result: unknown) => void },
    ) {
      rules.push({ step, select, before: watcher.before, after: watcher.after });
    },
    /**
     * Fails the chosen give-backs as the store does once all its tries failed: `releaseWithRetries`
     * answers `{ error }` (it never throws), unapplied. `stop` ends it.
     */
    failGiveBacks(select: StepSelect = () => true, error = () => new Error('injected failure')) {
      let active = true;
      let failures = 0;
      rules.push({
        step: 'releaseWithRetries',
        select: (call) => active && select(call),
        instead: () => {
          failures++;
          return { error: error() };
        },
      });
      return {
        get failures() {
          return failures;
        },
        stop: () => {
          active = false;
        },
      };
    },
  };
}

/** The id a step names: a record's (from its lease, record or id) or, for the DLQ's steps, a message's. */
function idOf(step: StoreStep, args: unknown[]): string {
  const first = args[0];
  if (typeof first === 'string') return first;
  if (step === 'acquire') return (first as { id: string }).id;
  return (first as { id?: string } | undefined)?.id ?? '';
}

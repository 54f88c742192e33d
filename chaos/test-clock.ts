/** A clock a test moves by hand, e.g. to expire a lease or a record without waiting. */
export interface TestClock {
  /** Epoch milliseconds; pass as `now` (it needs no `this`). */
  now(): number;
  advance(ms: number): void;
  set(ms: number): void;
}

/** Raised when a test would move the clock by a negative or non-finite amount. */
export class TestClockError extends Error {
  override readonly name = 'TestClockError';
}

/**
 * The clock of one function instance, `skewMs` off the schedule's (DESIGN §11, clocks): moved by
 * it, read by the code under test. `skews` cycles over the instances, in the order they start.
 */
export function skewedNow(
  clock: Pick<TestClock, 'now'>,
  skews: readonly number[] | undefined,
  instance: number,
) {
  const skewMs = skews?.length ? (skews[instance % skews.length] as number) : 0;
  return { skewMs, now: () => clock.now() + skewMs };
}

export function createTestClock(startMs = Date.now()): TestClock {
  let current = finite(startMs);
  return {
    now: () => current,
    advance: (ms) => {
      if (!(ms >= 0)) throw new TestClockError(`advance needs a finite ms >= 0, got ${ms}`);
      current = finite(current + ms);
    },
    set: (ms) => {
      current = finite(ms);
    },
  };
}

function finite(ms: number): number {
  if (!Number.isFinite(ms)) throw new TestClockError(`the clock needs finite epoch milliseconds, got ${ms}`);
  return ms;
}

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

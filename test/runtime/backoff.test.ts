import { describe, expect, it } from 'vitest';
import { backoffDelayMs, RECORD_WRITE_RETRY, retriedWorstCaseMs } from '../../lambdas/common/backoff.js';

const policy = { maxAttempts: 10, baseDelayMs: 100, maxDelayMs: 1_000 };

describe('backoffDelayMs', () => {
  it('doubles with every retry up to the cap', () => {
    const longest = (retry: number) => backoffDelayMs(retry, policy, () => 1);
    expect([1, 2, 3, 4, 5, 9].map(longest)).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it('keeps half of the delay and randomises the other half', () => {
    expect(backoffDelayMs(3, policy, () => 0)).toBe(200);
    expect(backoffDelayMs(3, policy, () => 0.5)).toBe(300);
    for (let i = 0; i < 100; i++) {
      const delay = backoffDelayMs(2, policy);
      expect(delay).toBeGreaterThanOrEqual(100);
      expect(delay).toBeLessThanOrEqual(200);
    }
  });
});

describe('retriedWorstCaseMs', () => {
  it('counts every try cut off and every wait at its longest', () => {
    const waits = [1, 2, 3, 4].map((retry) => backoffDelayMs(retry, { ...policy, maxAttempts: 5 }, () => 1));
    expect(retriedWorstCaseMs({ ...policy, maxAttempts: 5 }, 250)).toBe(
      5 * 250 + waits.reduce((a, b) => a + b),
    );
    // The publisher's reserve (issue 30): 3 tries cut off at 1 s, 50 and 100 ms apart.
    expect(retriedWorstCaseMs(RECORD_WRITE_RETRY, 1_000)).toBe(3_150);
  });
});

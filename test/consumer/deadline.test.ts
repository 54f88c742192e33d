import { describe, expect, it } from 'vitest';
import { DeadlineGuard, MIN_RECORD_TIME_RESERVE_MS } from '../../lambdas/consumer/deadline.js';

const left = (ms: number) => ({ getRemainingTimeInMillis: () => ms });

describe('the deadline guard (pure logic)', () => {
  it('starts with the minimum reserve and learns twice the 90th percentile of recent records', () => {
    const guard = new DeadlineGuard();
    expect(guard.reserveMs(60_000)).toBe(MIN_RECORD_TIME_RESERVE_MS);
    for (let i = 0; i < 17; i++) guard.recordFinished(100);
    for (let i = 0; i < 3; i++) guard.recordFinished(900);
    expect(guard.reserveMs(60_000)).toBe(1_800);
    // One outlier among twenty is below the 90th percentile: it does not set the reserve.
    for (let i = 0; i < 19; i++) guard.recordFinished(100);
    guard.recordFinished(5_000);
    expect(guard.reserveMs(60_000)).toBe(MIN_RECORD_TIME_RESERVE_MS);
  });

  it('never reserves more than half of what the batch started with, and always starts its first record', () => {
    const guard = new DeadlineGuard();
    for (let i = 0; i < 20; i++) guard.recordFinished(3_000);
    expect(guard.reserveMs(60_000)).toBe(6_000);
    expect(guard.reserveMs(4_000)).toBe(2_000);
    expect(guard.allowsStart(left(1_500), 4_000, false)).toBe(false);
    expect(guard.allowsStart(left(1_500), 4_000, true)).toBe(true);
  });

  it('keeps a fixed reserve as it is, for the first record too', () => {
    const guard = new DeadlineGuard(5_000);
    guard.recordFinished(10);
    expect(guard.reserveMs(2_000)).toBe(5_000);
    expect(guard.allowsStart(left(4_999), 60_000, true)).toBe(false);
    expect(guard.allowsStart(left(5_000), 60_000, false)).toBe(true);
  });
});

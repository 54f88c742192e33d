import { describe, expect, it } from 'vitest';
import {
  cappedVisibilitySeconds,
  DEFAULT_RETRY_DELAYS,
  MAX_VISIBILITY_SECONDS,
  RECEIVE_BEFORE_BATCH_MS,
  retryDelaySeconds,
  soonDelaySeconds,
  visibilityLimitMs,
} from '../../lambdas/consumer/retry-delay.js';

// DESIGN §5.1: the visibility a standard queue's failed record is given, by its receive count.

const delays = { baseSeconds: 5, maxSeconds: 60, soonSeconds: 2 };
const lowest = () => 0;
const highest = () => 1;

describe('retryDelaySeconds', () => {
  it('doubles its ceiling with each receive, from the base', () => {
    expect([1, 2, 3, 4].map((receive) => retryDelaySeconds(receive, delays, highest))).toEqual([
      5, 10, 20, 40,
    ]);
  });

  it('is capped', () => {
    expect(retryDelaySeconds(5, delays, highest)).toBe(60);
    expect(retryDelaySeconds(50, delays, highest)).toBe(60);
    expect(retryDelaySeconds(50, delays, lowest)).toBe(30);
  });

  it('jitters between half the ceiling and all of it, in whole seconds', () => {
    expect(retryDelaySeconds(3, delays, lowest)).toBe(10);
    expect(retryDelaySeconds(3, delays, () => 0.5)).toBe(15);
    expect(Number.isInteger(retryDelaySeconds(1, delays, () => 0.3))).toBe(true);
  });

  it('never asks for 0 (back at once) nor for more than SQS allows', () => {
    expect(retryDelaySeconds(1, { ...delays, baseSeconds: 1 }, lowest)).toBe(1);
    expect(retryDelaySeconds(0, delays, highest)).toBe(5);
    const huge = { baseSeconds: MAX_VISIBILITY_SECONDS, maxSeconds: MAX_VISIBILITY_SECONDS, soonSeconds: 1 };
    expect(retryDelaySeconds(10, huge, highest)).toBe(MAX_VISIBILITY_SECONDS);
  });

  it('defaults to 5 s doubling up to 300 s', () => {
    expect(DEFAULT_RETRY_DELAYS).toEqual({ baseSeconds: 5, maxSeconds: 300, soonSeconds: 2 });
  });
});

describe('soonDelaySeconds', () => {
  it('is between half of soonSeconds and all of it on a first delivery, at least 1', () => {
    expect(soonDelaySeconds(1, delays, lowest)).toBe(1);
    expect(soonDelaySeconds(1, delays, highest)).toBe(2);
    expect(soonDelaySeconds(1, { ...delays, soonSeconds: 10 }, lowest)).toBe(5);
  });

  it('spreads copies that fail together over the whole range, not all at its top', () => {
    // Rounded up, every draw in [1, 2) came back as 2 s: the copies returned together.
    const draws = [0.1, 0.3, 0.6, 0.9].map((r) => soonDelaySeconds(1, DEFAULT_RETRY_DELAYS, () => r));
    expect(draws).toEqual([1, 1, 2, 2]);
    expect([0.1, 0.9].map((r) => retryDelaySeconds(1, DEFAULT_RETRY_DELAYS, () => r))).toEqual([3, 5]);
  });

  it('doubles with each further delivery, capped: a key held 15 minutes brings its copy back 10 to 13 times', () => {
    expect([1, 2, 3, 4].map((receive) => soonDelaySeconds(receive, delays, highest))).toEqual([2, 4, 8, 16]);
    expect(soonDelaySeconds(30, delays, highest)).toBe(60);
    const returnsIn15Minutes = (random: () => number) => {
      let returns = 0;
      for (let waited = 0; waited < 900; returns++)
        waited += soonDelaySeconds(returns + 1, DEFAULT_RETRY_DELAYS, random);
      return returns;
    };
    expect([returnsIn15Minutes(highest), returnsIn15Minutes(lowest)]).toEqual([10, 13]);
  });
});

// Issue 40, item 3: SQS refuses a visibility beyond 12 hours from the receive that handed the record
// over (the emulator too: standard-batch.test.ts). The event has only the first receive's time.
describe('visibilityLimitMs', () => {
  const hours = (count: number) => count * 3_600_000;
  const batchStartedMs = Date.UTC(2026, 0, 2);

  it('counts 12 hours from the first receive on a first delivery, less a minute for the clocks', () => {
    const firstReceive = batchStartedMs - 5_000;
    const attributes = {
      ApproximateReceiveCount: '1',
      ApproximateFirstReceiveTimestamp: String(firstReceive),
    };
    expect(visibilityLimitMs(attributes, batchStartedMs)).toBe(firstReceive + hours(12) - 60_000);
  });

  it('on a later delivery, from the earliest the latest receive can have been: not the first, 20 hours ago', () => {
    const attributes = {
      ApproximateReceiveCount: '3',
      ApproximateFirstReceiveTimestamp: String(batchStartedMs - hours(20)),
    };
    // At the first receive, the limit had passed 8 hours ago, and every change would be 1 s.
    expect(visibilityLimitMs(attributes, batchStartedMs)).toBe(
      batchStartedMs - RECEIVE_BEFORE_BATCH_MS + hours(12) - 60_000,
    );
  });

  it('caps a delay at the limit, in whole seconds, at least 1', () => {
    const now = batchStartedMs;
    expect(cappedVisibilitySeconds(43_200, now + 1_000_500, now)).toBe(1_000);
    expect(cappedVisibilitySeconds(300, now + hours(11), now)).toBe(300);
    expect(cappedVisibilitySeconds(300, now - 5_000, now)).toBe(1);
  });
});

import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_DELAYS,
  MAX_VISIBILITY_SECONDS,
  retryDelaySeconds,
  soonDelaySeconds,
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

import { describe, expect, it } from 'vitest';
import { createTestClock, skewedNow, TestClockError } from '../../chaos/test-clock.js';

describe('createTestClock', () => {
  it('stands still until a test moves it', () => {
    const clock = createTestClock(1_000);
    const { now } = clock;

    expect(now()).toBe(1_000);
    clock.advance(250);
    expect(now()).toBe(1_250);
    clock.set(5_000);
    expect(now()).toBe(5_000);
  });

  it('starts at the real time by default', () => {
    const before = Date.now();
    expect(createTestClock().now()).toBeGreaterThanOrEqual(before);
  });

  it('refuses to go back with advance, or to leave finite time', () => {
    const clock = createTestClock(1_000);
    expect(() => clock.advance(-1)).toThrow(TestClockError);
    expect(() => clock.advance(Number.NaN)).toThrow(TestClockError);
    expect(() => clock.set(Number.POSITIVE_INFINITY)).toThrow(TestClockError);
    expect(clock.now()).toBe(1_000);
  });
});

describe('skewedNow', () => {
  it('gives each function instance its skew, cycling, moved with the schedule’s clock', () => {
    const clock = createTestClock(10_000);
    const instances = [0, 1, 2].map((instance) => skewedNow(clock, [900, -400], instance));
    expect(instances.map(({ skewMs }) => skewMs)).toEqual([900, -400, 900]);
    clock.advance(100);
    expect(instances.map(({ now }) => now())).toEqual([11_000, 9_700, 11_000]);
  });

  it('is the schedule’s clock without skews', () => {
    const clock = createTestClock(10_000);
    expect(skewedNow(clock, undefined, 3).now()).toBe(10_000);
    expect(skewedNow(clock, [], 0).skewMs).toBe(0);
  });
});

import { describe, expect, it } from 'vitest';
import { fnv1a32, mulberry32 } from '../../harness/hash.js';

describe('fnv1a32', () => {
  it('matches the published FNV-1a test vectors', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
  });
});

describe('mulberry32', () => {
  it('repeats its sequence for a seed and stays in [0, 1)', () => {
    const first = mulberry32(42);
    const again = mulberry32(42);
    const draws = Array.from({ length: 1_000 }, () => first());

    expect(Array.from({ length: 1_000 }, () => again())).toEqual(draws);
    expect(draws.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(mulberry32(43)()).not.toBe(draws[0]);
  });
});

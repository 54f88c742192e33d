import { describe, expect, it } from 'vitest';
import { CompletedRecordCache } from '../../lambdas/idempotency/index.js';

const entry = (expiresAtMs = 10_000) => ({ payloadHash: 'h', result: '1', expiresAtMs });

describe('CompletedRecordCache', () => {
  it('evicts the least recently used entry beyond its capacity', () => {
    const cache = new CompletedRecordCache(2);
    cache.set('a', entry());
    cache.set('b', entry());
    expect(cache.get('a', 0)).toBeDefined(); // a is now more recent than b
    cache.set('c', entry());
    expect(cache.get('b', 0)).toBeUndefined();
    expect(cache.get('a', 0)).toBeDefined();
    expect(cache.get('c', 0)).toBeDefined();
    expect(cache.size).toBe(2);
  });

  it('never answers for a record past its expiry', () => {
    const cache = new CompletedRecordCache();
    cache.set('a', entry(1_000));
    expect(cache.get('a', 999)).toBeDefined();
    expect(cache.get('a', 1_000)).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});

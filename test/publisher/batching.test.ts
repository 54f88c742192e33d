import { describe, expect, it } from 'vitest';
import { chunkByCountAndBytes } from '../../lambdas/publisher/batching.js';

const items = (...sizes: number[]) => sizes.map((bytes, id) => ({ id, bytes }));
const shape = (batches: { id: number }[][]) => batches.map((batch) => batch.map((item) => item.id));

describe('chunkByCountAndBytes', () => {
  it('cuts by count', () => {
    const batches = chunkByCountAndBytes(items(...Array(25).fill(1)), { maxEntries: 10, maxBytes: 1_000 });
    expect(batches.map((batch) => batch.length)).toEqual([10, 10, 5]);
  });

  it('cuts by total bytes, a batch exactly at the limit included', () => {
    const batches = chunkByCountAndBytes(items(100, 150, 100, 60, 40, 300), {
      maxEntries: 10,
      maxBytes: 250,
    });
    expect(shape(batches)).toEqual([[0, 1], [2, 3, 4], [5]]);
  });

  it('keeps the order of the items', () => {
    const input = items(...Array.from({ length: 37 }, (_, i) => (i * 13) % 70));
    const batches = chunkByCountAndBytes(input, { maxEntries: 10, maxBytes: 200 });
    expect(batches.flat()).toEqual(input);
    for (const batch of batches) {
      expect(batch.length).toBeLessThanOrEqual(10);
      expect(batch.reduce((sum, item) => sum + item.bytes, 0)).toBeLessThanOrEqual(200);
    }
  });

  it('gives an item over the limit a batch of its own', () => {
    expect(shape(chunkByCountAndBytes(items(10, 500, 10), { maxEntries: 10, maxBytes: 100 }))).toEqual([
      [0],
      [1],
      [2],
    ]);
  });

  it('makes no batch of nothing', () => {
    expect(chunkByCountAndBytes([], { maxEntries: 10, maxBytes: 100 })).toEqual([]);
  });
});

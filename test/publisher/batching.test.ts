import { describe, expect, it } from 'vitest';
import { chunkByCountAndBytes, chunkOnePerGroup } from '../../lambdas/publisher/batching.js';

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

describe('chunkOnePerGroup', () => {
  const grouped = (...groups: string[]) => groups.map((groupId, id) => ({ id, groupId, bytes: 10 }));

  it('never puts two items of a group in a batch, and keeps each group in order', () => {
    const batches = chunkOnePerGroup(grouped('a', 'a', 'b', 'a', 'c', 'b'), {
      maxEntries: 10,
      maxBytes: 1_000,
    });
    expect(shape(batches)).toEqual([[0, 2, 4], [1, 5], [3]]);
  });

  it('fills each batch with the earliest items of other groups, within count and bytes', () => {
    const many = grouped(...Array.from({ length: 12 }, (_, i) => `g${i}`), 'g0');
    expect(shape(chunkOnePerGroup(many, { maxEntries: 10, maxBytes: 1_000 }))).toEqual([
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      [10, 11, 12],
    ]);
    expect(shape(chunkOnePerGroup(grouped('a', 'b', 'c'), { maxEntries: 10, maxBytes: 20 }))).toEqual([
      [0, 1],
      [2],
    ]);
  });

  it('takes as few calls as a cut by count alone while ten groups or more have items left', () => {
    // The publisher tests' 1,000 orders: 35 groups of 28 or 29, interleaved in no order of group.
    const uneven = grouped(
      ...Array.from({ length: 1_000 }, (_, i) => `g${(i * 37 + Math.floor(i / 7)) % 50}`),
    );
    const batches = chunkOnePerGroup(uneven, { maxEntries: 10, maxBytes: 1_000 });
    expect(batches).toHaveLength(100);
    for (const batch of batches) expect(new Set(batch.map((item) => item.groupId)).size).toBe(batch.length);
    const byGroup = (order: typeof uneven) =>
      order.filter((item) => item.groupId === 'g7').map((item) => item.id);
    expect(byGroup(batches.flat())).toEqual(byGroup(uneven));
  });
});

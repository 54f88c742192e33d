/** SendMessageBatch takes at most 10 entries. */
export const MAX_BATCH_ENTRIES = 10;

export interface BatchLimits {
  maxEntries: number;
  /** SQS limits the sum of a batch's bodies to the queue's maximum message size. */
  maxBytes: number;
}

/**
 * Splits items, in order, into the fewest consecutive batches that respect both limits. An item
 * over `maxBytes` on its own (validation prevents it) still gets a batch, for SQS to refuse.
 */
export function chunkByCountAndBytes<T extends { bytes: number }>(
  items: readonly T[],
  limits: BatchLimits,
): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let currentBytes = 0;
  for (const item of items) {
    if (
      current.length > 0 &&
      (current.length === limits.maxEntries || currentBytes + item.bytes > limits.maxBytes)
    ) {
      batches.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(item);
    currentBytes += item.bytes;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/**
 * Splits items, in order, into batches that hold at most one item of each group: every group's
 * first item, then every group's second, and so on, each of these waves split by the limits. A
 * group's items stay in order from batch to batch.
 */
export function chunkOnePerGroup<T extends { bytes: number; groupId: string }>(
  items: readonly T[],
  limits: BatchLimits,
): T[][] {
  const waves: T[][] = [];
  const seen = new Map<string, number>();
  for (const item of items) {
    const index = seen.get(item.groupId) ?? 0;
    seen.set(item.groupId, index + 1);
    if (index === waves.length) waves.push([]);
    waves[index]?.push(item);
  }
  return waves.flatMap((wave) => chunkByCountAndBytes(wave, limits));
}

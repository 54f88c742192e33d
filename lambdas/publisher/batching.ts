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
 * Splits items into batches that hold at most one item of each group, a group's items in order
 * from batch to batch. Each batch takes the groups' next items, earliest in `items` first, as many
 * as the limits allow: so batches stay full while ten groups or more have items left, and a
 * request over many groups of uneven length takes as few calls as one cut by count alone.
 */
export function chunkOnePerGroup<T extends { bytes: number; groupId: string }>(
  items: readonly T[],
  limits: BatchLimits,
): T[][] {
  /** Each group's items not yet in a batch, in order, with their places in `items`. */
  const waiting = new Map<string, { item: T; place: number }[]>();
  items.forEach((item, place) => {
    const queue = waiting.get(item.groupId) ?? [];
    queue.push({ item, place });
    waiting.set(item.groupId, queue);
  });
  const batches: T[][] = [];
  while (waiting.size > 0) {
    const heads = [...waiting.values()]
      .map((queue) => queue[0] as { item: T; place: number })
      .sort((a, b) => a.place - b.place);
    const batch: T[] = [];
    let bytes = 0;
    for (const { item } of heads) {
      if (batch.length === limits.maxEntries) break;
      // The first always goes, even over the limit on its own (validation prevents it), for SQS to refuse.
      if (batch.length > 0 && bytes + item.bytes > limits.maxBytes) continue;
      batch.push(item);
      bytes += item.bytes;
      const queue = waiting.get(item.groupId) as { item: T; place: number }[];
      queue.shift();
      if (queue.length === 0) waiting.delete(item.groupId);
    }
    batches.push(batch);
  }
  return batches;
}

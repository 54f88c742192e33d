/** Runs `work` on every value, at most `limit` at a time. */
export async function forEachAtOnce<T>(
  values: readonly T[],
  limit: number,
  work: (value: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < values.length) await work(values[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, values.length) }, worker));
}

/**
 * The deepest nesting of arrays and objects a message payload may have. Real business documents
 * stay far below it (DynamoDB itself stops at 32 levels), while everything that walks a payload
 * recursively — canonicalJson for keys and hashes, JSON.stringify, structured clone, a consumer's
 * own code — overflows the stack a few thousand levels down. Checked before any of them runs.
 */
export const MAX_PAYLOAD_DEPTH = 64;

/**
 * Whether a parsed JSON value nests arrays and objects more than `maxDepth` levels deep (`[]` and
 * `{}` are one level, a scalar none). Walks with an explicit stack, so a hostile value of any depth
 * is measured without overflowing the call stack; it stops at the first branch past the limit.
 */
export function isNestedDeeperThan(value: unknown, maxDepth: number): boolean {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.value === null || typeof next.value !== 'object') continue;
    const depth = next.depth + 1;
    if (depth > maxDepth) return true;
    for (const child of Object.values(next.value)) pending.push({ value: child, depth });
  }
  return false;
}

/** The problem, as a sentence, of a payload nested deeper than {@link MAX_PAYLOAD_DEPTH}. */
export const PAYLOAD_TOO_DEEP =
  `payload nests arrays and objects more than ${MAX_PAYLOAD_DEPTH} levels deep: ` +
  'flatten it, or send a reference to where the document is stored';

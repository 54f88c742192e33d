/** A message's identity (DESIGN §2): how its key is checked, and derived when its producer gave none. */
import { createHash } from 'node:crypto';

/** SQS's rule for a MessageDeduplicationId: 1–128 printable ASCII characters, no spaces. */
const KEY_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** JSON with object keys sorted at every level, so equal values always serialise to equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, nested: unknown) => {
    if (nested === null || typeof nested !== 'object' || Array.isArray(nested)) return nested;
    // No prototype: an own `__proto__` key (JSON.parse makes one) is then a plain property, where
    // assigning it to `{}` would set the prototype instead and drop it from the text.
    const sorted: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(nested).sort()) sorted[key] = (nested as Record<string, unknown>)[key];
    return sorted;
  });
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The key of a message whose producer gave none (DESIGN §2): identical retries of the same
 * message get the same key, so SQS and the consumer can recognise them.
 */
export function deriveMessageKey(message: { type: string; groupId: string; payload: unknown }): string {
  return sha256Hex(canonicalJson([message.type, message.groupId, message.payload ?? null]));
}

export function isValidKey(key: unknown): key is string {
  return typeof key === 'string' && KEY_PATTERN.test(key);
}

import { createHash } from 'node:crypto';
import { IdempotencyConfigurationError } from './errors.js';

/** SQS's rule for a MessageDeduplicationId: 1–128 printable ASCII characters, no spaces. */
const KEY_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** JSON with object keys sorted at every level, so equal values always serialise to equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, nested: unknown) => {
    if (nested === null || typeof nested !== 'object' || Array.isArray(nested)) return nested;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(nested).sort()) sorted[key] = (nested as Record<string, unknown>)[key];
    return sorted;
  });
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The hash stored with a record: the same key with another payload hash is a conflict. */
export function payloadHash(payload: unknown): string {
  return sha256Hex(canonicalJson(payload) ?? 'undefined');
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

export function assertValidKey(key: unknown): asserts key is string {
  if (!isValidKey(key)) {
    throw new IdempotencyConfigurationError(
      `Invalid idempotency key ${JSON.stringify(key)}: use 1–128 printable ASCII characters without spaces ` +
        '(letters, digits and punctuation), the same rule as an SQS MessageDeduplicationId.',
    );
  }
}

/** A namespace names one operation (e.g. "ledger"), so two operations never share a key space. */
export function recordId(namespace: string, key: string): string {
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(namespace)) {
    throw new IdempotencyConfigurationError(
      `Invalid idempotency namespace ${JSON.stringify(namespace)}: use 1–64 letters, digits, "_", ".", ":" or "-".`,
    );
  }
  assertValidKey(key);
  return `${namespace}#${key}`;
}

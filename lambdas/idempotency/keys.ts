import { canonicalJson, isValidKey, sha256Hex } from '../common/message-key.js';
import { IdempotencyConfigurationError } from './errors.js';

/** The hash stored with a record: the same key with another payload hash is a conflict. */
export function payloadHash(payload: unknown): string {
  return sha256Hex(canonicalJson(payload) ?? 'undefined');
}

export function assertValidKey(key: unknown): asserts key is string {
  if (!isValidKey(key)) {
    throw new IdempotencyConfigurationError(
      `Invalid idempotency key ${JSON.stringify(key)}: use 1–128 printable ASCII characters without spaces ` +
        '(letters, digits and punctuation), the same rule as an SQS MessageDeduplicationId.',
    );
  }
}

/**
 * The publisher's namespace: its request records are `publish#<requestId>`. IAM keeps every other
 * function off them (DESIGN §3), so no consumer operation may take it (`assertOperationNamespace`).
 */
export const PUBLISH_NAMESPACE = 'publish';

/**
 * Refuses, where a consumer operation is built, a namespace its records cannot have — invalid, or
 * the publisher's, which IAM would refuse on AWS record by record (and the sandbox would not).
 */
export function assertOperationNamespace(namespace: string): void {
  recordId(namespace, 'probe');
  if (namespace === PUBLISH_NAMESPACE) {
    throw new IdempotencyConfigurationError(
      `The idempotency namespace "${PUBLISH_NAMESPACE}" is reserved for the publisher's request records: name the operation otherwise.`,
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

import { describe, expect, it } from 'vitest';
import { canonicalJson, deriveMessageKey, isValidKey } from '../../lambdas/common/message-key.js';
import { IdempotencyConfigurationError } from '../../lambdas/idempotency/index.js';
import { payloadHash, recordId } from '../../lambdas/idempotency/keys.js';

describe('canonicalJson', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('gives equal text for objects built in different orders', () => {
    expect(canonicalJson({ x: 1, y: { p: 1, q: 2 } })).toBe(canonicalJson({ y: { q: 2, p: 1 }, x: 1 }));
  });
});

describe('deriveMessageKey', () => {
  const message = { type: 'OrderPlaced', groupId: 'customer-1', payload: { orderId: 'o-1', qty: 2 } };

  it('is the same for an identical retry, whatever the key order of the payload', () => {
    const retry = { ...message, payload: { qty: 2, orderId: 'o-1' } };
    expect(deriveMessageKey(retry)).toBe(deriveMessageKey(message));
    expect(deriveMessageKey(message)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('differs when type, group or payload differ', () => {
    const base = deriveMessageKey(message);
    expect(deriveMessageKey({ ...message, type: 'OrderCancelled' })).not.toBe(base);
    expect(deriveMessageKey({ ...message, groupId: 'customer-2' })).not.toBe(base);
    expect(deriveMessageKey({ ...message, payload: { orderId: 'o-1', qty: 3 } })).not.toBe(base);
  });

  it('does not confuse values that concatenate to the same text', () => {
    expect(deriveMessageKey({ type: 'ab', groupId: 'c', payload: 1 })).not.toBe(
      deriveMessageKey({ type: 'a', groupId: 'bc', payload: 1 }),
    );
  });
});

describe('keys and namespaces', () => {
  it('accepts exactly the SQS deduplication id character set and length', () => {
    expect(isValidKey('order-1:payment/2#x')).toBe(true);
    expect(isValidKey('a'.repeat(128))).toBe(true);
    expect(isValidKey('a'.repeat(129))).toBe(false);
    expect(isValidKey('')).toBe(false);
    expect(isValidKey('has space')).toBe(false);
    expect(isValidKey('naïve')).toBe(false);
    expect(isValidKey(42)).toBe(false);
  });

  it('builds namespace#key and explains a bad key or namespace', () => {
    expect(recordId('ledger', 'k-1')).toBe('ledger#k-1');
    expect(() => recordId('ledger', 'bad key')).toThrow(IdempotencyConfigurationError);
    expect(() => recordId('ledger', 'bad key')).toThrow(/1–128 printable ASCII/);
    expect(() => recordId('led#ger', 'k')).toThrow(/Invalid idempotency namespace/);
  });

  it('hashes payloads canonically', () => {
    expect(payloadHash({ a: 1, b: 2 })).toBe(payloadHash({ b: 2, a: 1 }));
    expect(payloadHash({ a: 1 })).not.toBe(payloadHash({ a: 2 }));
    expect(payloadHash(undefined)).not.toBe(payloadHash(null));
  });
});

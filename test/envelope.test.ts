import { describe, expect, it } from 'vitest';
import {
  createEnvelope,
  InvalidEnvelopeError,
  parseEnvelope,
  parseReceivedEnvelope,
} from '../lambdas/common/envelope.js';
import { deriveMessageKey } from '../lambdas/common/message-key.js';
import { NonRetryableError } from '../lambdas/idempotency/index.js';

describe('message envelope', () => {
  it('derives the key when the producer gives none, and keeps a given one', () => {
    const message = { type: 'OrderPlaced', groupId: 'customer-1', payload: { orderId: 'o-1' } };
    const now = new Date('2026-11-21T10:00:00.000Z');
    expect(createEnvelope(message, now)).toEqual({
      ...message,
      key: deriveMessageKey(message),
      publishedAt: now.toISOString(),
    });
    expect(createEnvelope({ ...message, key: 'order-o-1' }, now).key).toBe('order-o-1');
  });

  it('round-trips through the SQS body', () => {
    const envelope = createEnvelope({ type: 'T', groupId: 'g', key: 'k', payload: [1, { a: null }] });
    expect(parseEnvelope(JSON.stringify(envelope))).toEqual(envelope);
  });

  it('rejects bodies that are not envelopes, permanently and saying why', () => {
    expect(() => parseEnvelope('not json')).toThrow(InvalidEnvelopeError);
    expect(() => parseEnvelope('not json')).toThrow(NonRetryableError);
    const bad = { type: '', key: 'has space', groupId: 'g', payload: 1, publishedAt: 'yesterday' };
    expect(() => parseEnvelope(JSON.stringify(bad))).toThrow(/type: type must not be empty/);
    expect(() => parseEnvelope(JSON.stringify(bad))).toThrow(/key: key must be 1–128 printable ASCII/);
    expect(() => parseEnvelope(JSON.stringify(bad))).toThrow(/publishedAt: publishedAt must be an ISO-8601/);
  });

  it('refuses a payload nested thousands of levels deep, permanently, before anything recurses into it', () => {
    const body = `{"type":"T","groupId":"g","publishedAt":"2026-11-21T10:00:00.000Z","payload":${deepArray(10_000)}}`;
    for (const parse of [parseEnvelope, parseReceivedEnvelope]) {
      expect(() => parse(body)).toThrow(InvalidEnvelopeError);
      expect(() => parse(body)).toThrow(
        'the message body is not a valid Oncely envelope: payload nests arrays and objects more than 64 levels deep',
      );
    }
  });

  it('accepts a payload nested 64 levels deep', () => {
    const envelope = createEnvelope({
      type: 'T',
      groupId: 'g',
      key: 'k',
      payload: JSON.parse(deepArray(64)),
    });
    expect(parseEnvelope(JSON.stringify(envelope))).toEqual(envelope);
  });

  it('lets a received envelope lack its key (the consumer falls back to the dedup id), nothing else', () => {
    const { key: _key, ...keyless } = createEnvelope({ type: 'T', groupId: 'g', payload: 1 });
    expect(parseReceivedEnvelope(JSON.stringify(keyless))).toEqual(keyless);
    expect(() => parseEnvelope(JSON.stringify(keyless))).toThrow(/key: Invalid input/);
    expect(() => parseReceivedEnvelope(JSON.stringify({ ...keyless, groupId: '' }))).toThrow(
      InvalidEnvelopeError,
    );
  });
});

/** JSON text of arrays within arrays, `depth` levels deep. */
function deepArray(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

import { describe, expect, it } from 'vitest';
import { canonicalJson, deriveMessageKey } from '../../lambdas/common/message-key.js';
import { payloadHash } from '../../lambdas/idempotency/keys.js';
import { PublishConflictError } from '../../lambdas/publisher/errors.js';
import { lambdaContext } from '../support/lambda-context.js';
import { usePublisherFixture } from '../support/publisher.js';
import { drainQueue } from '../support/sqs.js';

// JSON.parse makes `__proto__` an own key, as any payload that came in as JSON has it.
const withProto = (amount: number) => JSON.parse(`{"id":1,"__proto__":{"amount":${amount}}}`) as unknown;
const message = (amount: number) => ({ type: 'Refund', groupId: 'customer-1', payload: withProto(amount) });

describe('canonical JSON of a payload with an own __proto__ key', () => {
  it('keeps the key, so two such payloads that differ there differ in text, derived key and request hash', () => {
    expect(canonicalJson(withProto(100))).toBe('{"__proto__":{"amount":100},"id":1}');
    expect(deriveMessageKey(message(100))).not.toBe(deriveMessageKey(message(999)));
    expect(payloadHash([message(100)])).not.toBe(payloadHash([message(999)]));
  });

  const fixture = usePublisherFixture();

  it('the publisher sends both messages, and refuses the second under the first one’s requestId', async () => {
    const handler = fixture.publisher();
    const first = await handler({ requestId: 'refund-1', messages: [message(100)] }, lambdaContext());
    const second = await handler({ messages: [message(999)] }, lambdaContext());
    const conflict = await handler(
      { requestId: 'refund-1', messages: [message(999)] },
      lambdaContext(),
    ).catch((error: unknown) => error);

    expect([...first.results, ...second.results].map((result) => result.status)).toEqual(['sent', 'sent']);
    expect(conflict).toBeInstanceOf(PublishConflictError);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 2);
    expect(received.map(({ envelope }) => envelope.payload)).toEqual([withProto(100), withProto(999)]);
  });
});

import { describe, expect, it } from 'vitest';
import type { MessageResult } from '../../lambdas/publisher/contract.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { readItem } from '../support/dynamodb.js';
import { lambdaContext } from '../support/lambda-context.js';
import { expectedKey, nth, orders, usePublisherFixture } from '../support/publisher.js';
import { drainQueue } from '../support/sqs.js';
import { injectCallFaults, injectEntryFaults, PERMANENT, TRANSIENT } from '../support/sqs-faults.js';

/** The publisher on a standard queue (DESIGN §5.1); test/publisher/handler.test.ts has the FIFO cases. */
const fixture = usePublisherFixture({ standard: true });

const statuses = (results: readonly MessageResult[]) => results.map((result) => result.status);
const connectionReset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

describe('publisher: a standard queue', () => {
  it('sends each message with its group as the fair-queue tenant key and no deduplication id, ten to a call', async () => {
    const messages = orders(30, 3);
    const calls = countRequests(fixture.sqs);

    const response = await fixture.publisher()({ messages }, lambdaContext());

    expect(statuses(response.results)).toEqual(messages.map(() => 'sent'));
    expect(response.queueType).toBe('standard');
    expect(calls.counts.SendMessageBatch).toBe(3);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, messages.length); // and not one more
    expect(received.map((message) => message.deduplicationId)).toEqual(received.map(() => undefined));
    expect(received.map((message) => message.groupId)).toEqual(received.map((m) => m.envelope.groupId));
    const sentIds = new Map(
      response.results.map((result) => [result.key, (result as { messageId: string }).messageId]),
    );
    expect(received.map((message) => sentIds.get(message.envelope.key))).toEqual(
      received.map((m) => m.messageId),
    );
  });

  it("retries a message refused before it was applied on its own: its group's later messages go on, none blocked", async () => {
    const messages = orders(10, 1); // one group: on a FIFO queue a failure would hold back the rest
    const refusedTwice = expectedKey(nth(messages, 2));
    const refused = expectedKey(nth(messages, 5));
    const log = injectEntryFaults(
      fixture.sqs,
      ({ key, attempt }) => {
        if (key === refusedTwice && attempt <= 2) return { when: 'before-sending', ...TRANSIENT };
        return key === refused ? { when: 'before-sending', ...PERMANENT } : undefined;
      },
      { laterEntriesOfGroupFail: false }, // a standard queue answers each entry on its own
    );

    const { results } = await fixture.publisher()({ messages }, lambdaContext());

    expect(statuses(results)).toEqual(messages.map((_, i) => (i === 5 ? 'failed' : 'sent')));
    expect(results[5]).toMatchObject({ reason: expect.stringContaining('InvalidMessageContents') });
    // The first call carried the whole group; only the refused message was sent again, alone.
    expect(log.sentKeys.slice(0, 10)).toEqual(messages.map(expectedKey));
    expect(log.sentKeys.slice(10)).toEqual([refusedTwice, refusedTwice]);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 9); // and not one more
    expect(new Set(received.map((message) => message.envelope.key))).not.toContain(refused);
  });

  it('reports sent a message whose answer was lost: its retry enqueued it again, two copies under one key', async () => {
    const messages = orders(10, 2);
    const lost = expectedKey(nth(messages, 4));
    const log = injectEntryFaults(fixture.sqs, ({ key, attempt }) =>
      key === lost && attempt === 1 ? { when: 'after-sending', ...TRANSIENT } : undefined,
    );

    const { results } = await fixture.publisher()({ messages }, lambdaContext());

    // "sent": SQS has it. Without a deduplication id SQS cannot drop the retry: the consumer's
    // record recognises the second copy by its key (DESIGN §5.1).
    expect(statuses(results)).toEqual(messages.map(() => 'sent'));
    expect(log.attemptsOf(lost)).toBe(2);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 11); // and not one more
    const copies = received.filter((message) => message.envelope.key === lost);
    expect(copies).toHaveLength(2);
    expect(copies[0]?.envelope).toEqual(copies[1]?.envelope); // the same body, publishedAt included
    expect(copies.map((copy) => copy.messageId)).toContain((results[4] as { messageId: string }).messageId);
  });

  it('calls unknown every message whose calls may all have reached SQS, blocks none, and stores it', async () => {
    injectCallFaults(fixture.sqs, () => ({ when: 'after-sending', error: connectionReset() }));
    const request = { requestId: 'standard-lost', messages: orders(12, 1) };
    const retry = { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 };

    const response = await fixture.publisher({ retry })(request, lambdaContext());

    // On a FIFO queue: 10 unknown, then 2 blocked behind them (handler.test.ts). Here the last two
    // went in a call of their own.
    expect(statuses(response.results)).toEqual(request.messages.map(() => 'unknown'));
    const stored = await readItem(fixture.table, `publish#${request.requestId}`);
    expect(JSON.parse(stored?.result ?? 'null')).toEqual(response);
    // Each of the 2 attempts at each call was applied: 24 copies, two per key, for the consumer.
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 24); // and not one more
    for (const message of request.messages) {
      expect(received.filter((copy) => copy.envelope.key === expectedKey(message))).toHaveLength(2);
    }
  });

  it('replays a repeated requestId with queueType, sending nothing', async () => {
    const request = { requestId: 'standard-repeat', messages: orders(3, 1) };
    const handler = fixture.publisher();
    const first = await handler(request, lambdaContext());
    const calls = countRequests(fixture.sqs);

    const again = await handler(request, lambdaContext());

    expect(again).toEqual(first);
    expect(again.queueType).toBe('standard');
    expect(calls.counts.SendMessageBatch ?? 0).toBe(0);
    await drainQueue(fixture.sqs, fixture.queueUrl, 3); // and not one more
  });
});

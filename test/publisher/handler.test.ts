import { SQSServiceException } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { DynamoDBIdempotencyStore, RecordNotWrittenError } from '../../lambdas/idempotency/index.js';
import type { MessageResult, PublishResponse } from '../../lambdas/publisher/contract.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { localDynamoClient, readItem } from '../support/dynamodb.js';
import { lambdaContext } from '../support/lambda-context.js';
import { expectedKey, nth, orders, requestedKeysOfGroup, usePublisherFixture } from '../support/publisher.js';
import { failRequests } from '../support/sdk-middleware.js';
import { drainQueue, keysOfGroup } from '../support/sqs.js';
import {
  holdSends,
  injectCallFaults,
  injectEntryFaults,
  PERMANENT,
  TRANSIENT,
} from '../support/sqs-faults.js';

const fixture = usePublisherFixture();

const groupsOf = (messages: readonly { groupId: string }[]) => [...new Set(messages.map((m) => m.groupId))];
const statuses = (results: readonly MessageResult[]) => results.map((result) => result.status);
const messageIdOf = (result: MessageResult | undefined) =>
  result?.status === 'sent' ? result.messageId : undefined;

describe('publisher: sending', () => {
  it('sends 1,000 messages over 50 groups in ceil(n/10) batches, each group in request order', async () => {
    const messages = orders(1_000, 50);
    const handler = fixture.publisher();
    const calls = countRequests(fixture.sqs);

    const results: MessageResult[] = [];
    // Two requests: at most MAX_MESSAGES_PER_REQUEST (500) each.
    for (const part of [messages.slice(0, 500), messages.slice(500)]) {
      results.push(...(await handler({ messages: part }, lambdaContext())).results);
    }

    expect(statuses(results)).toEqual(messages.map(() => 'sent'));
    expect(results.map((result) => result.key)).toEqual(messages.map(expectedKey));
    expect(calls.counts.SendMessageBatch).toBe(Math.ceil(messages.length / 10));

    const received = await drainQueue(fixture.sqs, fixture.queueUrl, messages.length);
    for (const group of groupsOf(messages)) {
      expect(keysOfGroup(received, group)).toEqual(requestedKeysOfGroup(messages, group));
    }
    // The key is the deduplication id and travels in the envelope; SQS's message ids are reported.
    expect(received.map((message) => message.deduplicationId)).toEqual(received.map((m) => m.envelope.key));
    const sentIds = new Map(results.map((result) => [result.key, messageIdOf(result)]));
    expect(received.map((message) => sentIds.get(message.envelope.key))).toEqual(
      received.map((m) => m.messageId),
    );
  });

  it("splits batches by size as well: their bodies never exceed the queue's maximum message size", async () => {
    const messages = Array.from({ length: 5 }, (_, i) => ({
      type: 'DocumentStored',
      groupId: `documents-${i}`,
      key: `document-${i}`,
      payload: { text: 'x'.repeat(100_000) },
    }));
    const calls = countRequests(fixture.sqs);
    const { results } = await fixture.publisher()({ messages }, lambdaContext());

    expect(statuses(results)).toEqual(['sent', 'sent', 'sent', 'sent', 'sent']);
    expect(calls.counts.SendMessageBatch).toBe(3); // two ~100 KB bodies fit in 256 KB, three do not
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 5);
    expect(received.map((m) => m.envelope.key).sort()).toEqual(messages.map((m) => m.key));
  });
});

describe('publisher: partial failures', () => {
  it('retries transiently failed entries with the same deduplication id: each is delivered once, in order', async () => {
    const messages = orders(60, 6);
    const lostAnswers = new Set([3, 17, 42].map((i) => expectedKey(nth(messages, i))));
    const refusedTwice = expectedKey(nth(messages, 25));
    const log = injectEntryFaults(fixture.sqs, ({ key, attempt }) => {
      // Enqueued, but reported failed: only the same deduplication id on the retry prevents a duplicate.
      if (lostAnswers.has(key) && attempt === 1) return { when: 'after-sending', ...TRANSIENT };
      if (key === refusedTwice && attempt <= 2) return { when: 'before-sending', ...TRANSIENT };
      return undefined;
    });

    const { results } = await fixture.publisher()({ messages }, lambdaContext());

    expect(statuses(results)).toEqual(messages.map(() => 'sent'));
    for (const key of lostAnswers) expect(log.attemptsOf(key)).toBe(2);
    expect(log.attemptsOf(refusedTwice)).toBe(3);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, messages.length); // and not one more
    for (const group of groupsOf(messages)) {
      expect(keysOfGroup(received, group)).toEqual(requestedKeysOfGroup(messages, group));
    }
    // The retry of an enqueued entry was deduplicated: SQS answered with the first message id.
    const delivered = new Map(received.map((message) => [message.envelope.key, message.messageId]));
    for (const key of lostAnswers) {
      expect(messageIdOf(results.find((result) => result.key === key))).toBe(delivered.get(key));
    }
  });

  it("blocks only its own group's later messages after a permanent failure, and never reorders", async () => {
    const messages = orders(60, 6);
    const victimIndex = 20;
    const victim = nth(messages, victimIndex);
    const victimKey = expectedKey(victim);
    const log = injectEntryFaults(fixture.sqs, ({ key }) =>
      key === victimKey ? { when: 'before-sending', ...PERMANENT } : undefined,
    );

    const { results } = await fixture.publisher()({ messages }, lambdaContext());

    messages.forEach((message, i) => {
      const result = results[i];
      if (i === victimIndex) {
        expect(result).toMatchObject({
          status: 'failed',
          reason: expect.stringContaining('InvalidMessageContents'),
        });
      } else if (message.groupId === victim.groupId && i > victimIndex) {
        expect(result).toMatchObject({
          status: 'blocked',
          reason: expect.stringContaining(`messages[${victimIndex}]`),
        });
      } else {
        expect(result?.status).toBe('sent');
      }
    });
    expect(log.attemptsOf(victimKey)).toBe(1); // a permanent failure is not retried

    const sentCount = results.filter((result) => result.status === 'sent').length;
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, sentCount);
    for (const group of groupsOf(messages)) {
      const requested = requestedKeysOfGroup(messages, group);
      const expected =
        group === victim.groupId ? requested.slice(0, requested.indexOf(victimKey)) : requested;
      expect(keysOfGroup(received, group)).toEqual(expected);
    }
  });

  it('keeps a group in order when SQS refuses a message, takes a later one and the answer is lost', async () => {
    // Issue 42, item 3: two faults at once. With a group's messages in one call, the retry after the
    // lost answer sent the refused one behind the later one SQS had taken: on the queue out of order.
    const messages = orders(4, 1);
    const firstKey = expectedKey(nth(messages, 0));
    const log = injectEntryFaults(
      fixture.sqs,
      ({ key, attempt }) =>
        key === firstKey && attempt === 1 ? { when: 'before-sending', ...TRANSIENT } : undefined,
      { laterEntriesOfGroupFail: false },
    );
    const connectionReset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    injectCallFaults(fixture.sqs, (call) =>
      call === 1 ? { when: 'after-sending', error: connectionReset } : undefined,
    );

    const { results } = await fixture.publisher()({ messages }, lambdaContext());

    expect(statuses(results)).toEqual(messages.map(() => 'sent'));
    expect(log.attemptsOf(firstKey)).toBeGreaterThan(1);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, messages.length);
    const [group] = groupsOf(messages) as [string];
    expect(keysOfGroup(received, group)).toEqual(requestedKeysOfGroup(messages, group));
  });

  it('retries whole calls that fail with throttling or a dropped connection, with the same deduplication ids', async () => {
    const messages = orders(40, 4);
    const throttled = new SQSServiceException({
      name: 'ThrottlingException',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
      message: 'Rate exceeded',
    });
    const connectionReset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const log = injectEntryFaults(fixture.sqs, () => undefined); // outermost: it sees every attempt
    injectCallFaults(fixture.sqs, (call) => {
      if (call === 1) return { when: 'before-sending', error: throttled };
      // The batch was enqueued, then the answer was lost: a retry with new ids would duplicate it.
      if (call === 3) return { when: 'after-sending', error: connectionReset };
      return undefined;
    });

    const { results } = await fixture.publisher()({ messages }, lambdaContext());

    expect(statuses(results)).toEqual(messages.map(() => 'sent'));
    const retried = messages.map(expectedKey).filter((key) => log.attemptsOf(key) > 1);
    // The throttled call and the reset one: each carried one message of each of the 4 groups.
    expect(retried.length).toBeGreaterThanOrEqual(8);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, messages.length); // and not one more
    for (const group of groupsOf(messages)) {
      expect(keysOfGroup(received, group)).toEqual(requestedKeysOfGroup(messages, group));
    }
  });
});

describe('publisher: what is known of a message', () => {
  const connectionReset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
  const throttled = new SQSServiceException({
    name: 'ThrottlingException',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
    message: 'Rate exceeded',
  });
  /** One group of 12: sent one message a call, each after the one before it is through. */
  const oneGroup = () => orders(12, 1);

  it('reports unknown, never failed, the messages of calls SQS applied but whose answers were lost, and stores it', async () => {
    injectCallFaults(fixture.sqs, () => ({ when: 'after-sending', error: connectionReset }));
    const request = { requestId: 'checkout-lost', messages: oneGroup() };

    const response = await fixture.publisher()(request, lambdaContext());

    // The first, in every lost call, may be on the queue; those that waited behind it are not.
    expect(statuses(response.results)).toEqual(['unknown', ...Array(11).fill('blocked')]);
    expect(response.results[0]).toMatchObject({
      reason: 'may be on the queue: Error: socket hang up (gave up after 5 attempts)',
    });
    expect(response.results[10]).toMatchObject({
      reason: expect.stringContaining('messages[0] of the same group may not have been sent'),
    });
    // A repeat of the requestId replays exactly this: the record stores the unknowns as unknown.
    const record = await readItem(fixture.table, 'publish#checkout-lost');
    expect(JSON.parse(record?.result ?? 'null')).toEqual(response);
    // SQS had it all along, once despite the retries.
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 1);
    expect(received.map((m) => m.envelope.key)).toEqual(request.messages.slice(0, 1).map(expectedKey));
  });

  it('reports failed the messages of calls refused before they reached SQS', async () => {
    injectCallFaults(fixture.sqs, () => ({ when: 'before-sending', error: throttled }));

    const { results } = await fixture.publisher()({ messages: oneGroup() }, lambdaContext());

    // Certainly not sent: the first is failed, and its group waits behind it.
    expect(statuses(results)).toEqual(['failed', ...Array(11).fill('blocked')]);
    expect(results[0]).toMatchObject({
      reason: 'ThrottlingException: Rate exceeded (gave up after 5 attempts)',
    });
    await drainQueue(fixture.sqs, fixture.queueUrl, 0);
  });
});

describe('publisher: a request run again', () => {
  it('never calls failed or blocked what an earlier run of the request may have sent', async () => {
    // The first run sends, then its completion write fails on every try: the record stays
    // IN_PROGRESS, and once its lease expires the client's retry runs the request again, which
    // sees nothing of the first run. Now SQS refuses the group's first message for good.
    let clock = Date.now();
    const dynamodb = localDynamoClient();
    const store = new DynamoDBIdempotencyStore({
      client: dynamodb,
      tableName: fixture.table,
      now: () => clock,
    });
    const completion = failRequests(
      dynamodb,
      (operation, input) => operation === 'UpdateItem' && JSON.stringify(input).includes('COMPLETED'),
    );
    const request = { requestId: 'checkout-rerun', messages: orders(2, 1) };
    try {
      await expect(fixture.publisher({ store })(request, lambdaContext())).rejects.toBeInstanceOf(
        RecordNotWrittenError,
      );
      completion.stop();
      clock += 20 * 60 * 1000; // past the lease: Lambda's longest timeout and its margin
      const firstKey = expectedKey(nth(request.messages, 0));
      injectEntryFaults(fixture.sqs, ({ key }) =>
        key === firstKey ? { when: 'before-sending', ...PERMANENT } : undefined,
      );

      const { results } = await fixture.publisher({ store })(structuredClone(request), lambdaContext());

      expect(statuses(results)).toEqual(['unknown', 'unknown']);
      expect(results[0]).toMatchObject({
        reason: expect.stringContaining('an earlier run of this request may have sent it'),
      });
      const received = await drainQueue(fixture.sqs, fixture.queueUrl, 2); // the first run's
      expect(received.map((m) => m.envelope.key)).toEqual(request.messages.map(expectedKey));
    } finally {
      dynamodb.destroy();
    }
  });
});

describe('publisher: request idempotency', () => {
  it('answers a repeated requestId with the first response, sends nothing, however late', async () => {
    let clock = Date.now();
    const store = new DynamoDBIdempotencyStore({
      client: fixture.dynamodb,
      tableName: fixture.table,
      now: () => clock,
    });
    const handler = fixture.publisher({ store });
    const request = { requestId: 'checkout-42', messages: orders(12, 3) };
    const calls = countRequests(fixture.sqs);

    const first = await handler(request, lambdaContext());
    expect(calls.counts.SendMessageBatch).toBe(5); // its longest group has 5: one of each group per call
    calls.reset();

    clock += 24 * 60 * 60 * 1000; // long after SQS's 5-minute deduplication window
    const repeat: PublishResponse = await handler(structuredClone(request), lambdaContext());
    expect(repeat).toEqual(first);
    expect(calls.total()).toBe(0);
    await drainQueue(fixture.sqs, fixture.queueUrl, 12); // no more than the first request's
  });

  it("echoes the callId of the request that produced the response: a replay carries the first one's", async () => {
    const handler = fixture.publisher();
    const messages = orders(2, 1);
    const calls = countRequests(fixture.sqs);

    const first = await handler({ requestId: 'checkout-43', callId: 'call-1', messages }, lambdaContext());
    const repeat = await handler({ requestId: 'checkout-43', callId: 'call-2', messages }, lambdaContext());
    const without = await handler({ requestId: 'checkout-44', messages }, lambdaContext());

    expect(first.callId).toBe('call-1');
    expect(repeat).toEqual(first); // the callId is not part of the request's hash: no conflict
    expect(without).not.toHaveProperty('callId');
    expect(calls.counts.SendMessageBatch).toBe(4); // 2 messages of a group: a call each, for 2 requests
  });

  it('refuses the same requestId with different messages as a conflict, sending nothing', async () => {
    const handler = fixture.publisher();
    await handler({ requestId: 'checkout-42', messages: orders(3, 1) }, lambdaContext());
    const calls = countRequests(fixture.sqs);

    const other = { requestId: 'checkout-42', messages: orders(3, 1, 'refund') };
    await expect(handler(other, lambdaContext())).rejects.toMatchObject({
      name: 'PublishConflictError',
      requestId: 'checkout-42',
      message: expect.stringContaining('was already used for a different request'),
    });
    expect(calls.total()).toBe(0);
  });

  it('tells a concurrent repeat that the request is in progress, then replays the response', async () => {
    const handler = fixture.publisher();
    const request = { requestId: 'checkout-7', messages: orders(5, 1) };
    const { held, release } = holdSends(fixture.sqs);

    const first = handler(request, lambdaContext());
    await expect.poll(() => held(), { timeout: 60_000 }).toBe(true);
    await expect(handler(request, lambdaContext())).rejects.toMatchObject({
      name: 'PublishInProgressError',
      requestId: 'checkout-7',
      retryable: true,
      leaseExpiresAt: expect.any(Number),
    });
    release();
    const response = await first;
    expect(await handler(request, lambdaContext())).toEqual(response);
    await drainQueue(fixture.sqs, fixture.queueUrl, 5);
  });

  it('records nothing for a request without a requestId', async () => {
    const requests = countRequests(fixture.dynamodb);
    const { results } = await fixture.publisher()({ messages: orders(3, 1) }, lambdaContext());
    expect(statuses(results)).toEqual(['sent', 'sent', 'sent']);
    expect(requests.total()).toBe(0);
  });
});

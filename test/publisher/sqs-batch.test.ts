import { DeleteQueueCommand, SQSClient, SQSServiceException } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsBatchSender } from '../../lambdas/publisher/sqs-batch.js';
import type { PreparedMessage } from '../../lambdas/publisher/validation.js';
import { freePort } from '../../sandbox/free-port.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { createFifoQueue, drainQueue, localSqsClient } from '../support/sqs.js';
import { injectCallFaults, injectEntryFaults } from '../support/sqs-faults.js';

const sqs = localSqsClient(1);
let queueUrl: string;

beforeAll(async () => {
  queueUrl = (await createFifoQueue(sqs)).url;
});
afterAll(async () => {
  await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
  sqs.destroy();
});

function message(index: number, key: string): PreparedMessage {
  const body = JSON.stringify({
    type: 'T',
    key,
    groupId: 'g',
    payload: index,
    publishedAt: new Date().toISOString(),
  });
  return { index, key, groupId: 'g', body, bytes: Buffer.byteLength(body) };
}

describe('sqsBatchSender', () => {
  it('sends each message with its key as the deduplication id and reports what SQS answered', async () => {
    const outcomes = await sqsBatchSender(sqs, queueUrl)(
      [message(0, 'k-0'), message(1, 'k-1')],
      new AbortController().signal,
    );
    expect(outcomes).toEqual([
      { sent: true, messageId: expect.any(String), sequenceNumber: expect.any(String) },
      { sent: true, messageId: expect.any(String), sequenceNumber: expect.any(String) },
    ]);
    const received = await drainQueue(sqs, queueUrl, 2);
    expect(received.map((m) => m.deduplicationId)).toEqual(['k-0', 'k-1']);
  });

  it("treats a sender fault as permanent unless it is throttling, and SQS's own faults as transient", async () => {
    const faulty = localSqsClient(1);
    const faults = new Map([
      ['refused', { code: 'InvalidMessageContents', senderFault: true }],
      ['throttled', { code: 'RequestThrottled', senderFault: true }],
      ['broken', { code: 'InternalError', senderFault: false }],
    ]);
    injectEntryFaults(
      faulty,
      ({ key }) => ({ when: 'before-sending', code: '?', senderFault: false, ...faults.get(key) }),
      {
        laterEntriesOfGroupFail: false,
      },
    );
    const outcomes = await sqsBatchSender(faulty, queueUrl)(
      [message(0, 'refused'), message(1, 'throttled'), message(2, 'broken')],
      new AbortController().signal,
    );
    // What SQS lists in Failed it did not enqueue: never `maybeSent`.
    expect(outcomes).toEqual([
      {
        sent: false,
        retryable: false,
        maybeSent: false,
        reason: 'InvalidMessageContents: injected failure',
      },
      { sent: false, retryable: true, maybeSent: false, reason: 'RequestThrottled: injected failure' },
      { sent: false, retryable: true, maybeSent: false, reason: 'InternalError: injected failure' },
    ]);
    faulty.destroy();
  });
});

describe('sqsBatchSender: a failed call', () => {
  const throttled = new SQSServiceException({
    name: 'ThrottlingException',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
    message: 'Rate exceeded',
  });
  const connectionReset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

  it('may have been applied once the request reached SQS: its answer lost, every entry is maybe sent', async () => {
    const faulty = localSqsClient(1);
    injectCallFaults(faulty, () => ({ when: 'after-sending', error: connectionReset }));

    const outcomes = await sqsBatchSender(faulty, queueUrl)(
      [message(0, 'lost-0'), message(1, 'lost-1')],
      new AbortController().signal,
    );

    const lost = { sent: false, retryable: true, maybeSent: true, reason: 'Error: socket hang up' };
    expect(outcomes).toEqual([lost, lost]);
    const received = await drainQueue(sqs, queueUrl, 2); // SQS did enqueue them
    expect(received.map((m) => m.deduplicationId)).toEqual(['lost-0', 'lost-1']);
    faulty.destroy();
  });

  it('was certainly not applied when it failed before leaving: throttled, or raised on the client', async () => {
    const faulty = localSqsClient(1);
    const invalid = new Error('Invalid QueueUrl: raised by the client');
    const errors = [throttled, invalid];
    injectCallFaults(faulty, (call) => ({ when: 'before-sending', error: errors[call - 1] ?? invalid }));
    const send = sqsBatchSender(faulty, queueUrl);

    const [first] = await send([message(0, 'throttled')], new AbortController().signal);
    const [second] = await send([message(0, 'invalid')], new AbortController().signal);

    expect(first).toEqual({
      sent: false,
      retryable: true,
      maybeSent: false,
      reason: 'ThrottlingException: Rate exceeded',
    });
    expect(second).toMatchObject({ sent: false, retryable: false, maybeSent: false });
    await drainQueue(sqs, queueUrl, 0);
    faulty.destroy();
  });

  it('was certainly not applied when no connection could be made', async () => {
    const nobody = new SQSClient({
      ...localAwsConfig(`http://127.0.0.1:${await freePort()}`),
      maxAttempts: 1,
    });
    const [outcome] = await sqsBatchSender(nobody, queueUrl)(
      [message(0, 'refused')],
      new AbortController().signal,
    );
    expect(outcome).toMatchObject({
      sent: false,
      retryable: true,
      maybeSent: false,
      reason: expect.stringContaining('ECONNREFUSED'),
    });
    nobody.destroy();
  });

  it('was certainly not applied when SQS answered with a refusal (4xx)', async () => {
    const [outcome] = await sqsBatchSender(sqs, `${queueUrl}-missing.fifo`)(
      [message(0, 'nowhere')],
      new AbortController().signal,
    );
    expect(outcome).toMatchObject({
      sent: false,
      retryable: false,
      maybeSent: false,
      reason: expect.stringMatching(/QueueDoesNotExist|NonExistentQueue/),
    });
  });

  it('may have been applied when the deadline cut it off in flight, and was not sent when it had already passed', async () => {
    const inFlight = new AbortController();
    const faulty = localSqsClient(1);
    // The deadline strikes once SQS has the request, before its answer is read.
    faulty.middlewareStack.add(
      (next) => async (args) => {
        await next(args);
        inFlight.abort();
        throw Object.assign(new Error('Request aborted'), { name: 'AbortError' });
      },
      { step: 'initialize', name: 'deadlineInFlight' },
    );
    const [cutOff] = await sqsBatchSender(faulty, queueUrl)([message(0, 'cut-off')], inFlight.signal);

    const passed = new AbortController();
    passed.abort();
    const [late] = await sqsBatchSender(sqs, queueUrl)([message(0, 'late')], passed.signal);

    expect(cutOff).toMatchObject({
      sent: false,
      retryable: false,
      maybeSent: true,
      reason: expect.stringContaining(
        "cut off at the invocation's deadline, so whether SQS got it is unknown",
      ),
    });
    expect(late).toEqual({
      sent: false,
      retryable: false,
      maybeSent: false,
      reason: 'not sent: the invocation ran out of time',
    });
    await drainQueue(sqs, queueUrl, 1); // only the one cut off after SQS had it
    faulty.destroy();
  });
});

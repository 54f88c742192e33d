import { DeleteQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsBatchSender } from '../../lambdas/publisher/sqs-batch';
import type { PreparedMessage } from '../../lambdas/publisher/validation';
import { createFifoQueue, drainQueue, localSqsClient } from '../support/sqs';
import { injectEntryFaults } from '../support/sqs-faults';

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
    expect(outcomes).toEqual([
      { sent: false, retryable: false, reason: 'InvalidMessageContents: injected failure' },
      { sent: false, retryable: true, reason: 'RequestThrottled: injected failure' },
      { sent: false, retryable: true, reason: 'InternalError: injected failure' },
    ]);
    faulty.destroy();
  });

  it('reports a call cut off at the deadline as a final failure of unknown outcome', async () => {
    const deadline = new AbortController();
    deadline.abort();
    const [outcome] = await sqsBatchSender(sqs, queueUrl)([message(0, 'late')], deadline.signal);
    expect(outcome).toMatchObject({
      sent: false,
      retryable: false,
      reason: expect.stringContaining(
        "cut off at the invocation's deadline, so whether SQS got it is unknown",
      ),
    });
  });
});

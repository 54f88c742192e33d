import {
  ChangeMessageVisibilityCommand,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discardDeadLetters } from '../../cli/dead-letter-discard.js';
import { redriveDeadLetters } from '../../cli/dead-letter-redrive.js';
import { resolveAsRetry } from '../../cli/in-doubt-retry.js';
import { RedriveInterruptedError, ResendFailedError } from '../../cli/operations-errors.js';
import { describeRedrive, describeResolution } from '../../cli/operations-report.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { loseAnswers } from '../support/sdk-middleware.js';
import {
  createStandardQueue,
  deleteQueues,
  drainQueue,
  type FifoQueue,
  localSqsClient,
} from '../support/sqs.js';
import { envelopeBody, PAST, TTL_SECONDS } from './dlq-fifo.js';
import { envelope, inDoubtPipeline, park } from './in-doubt-support.js';
import { beforeRequests, fail, once, type RequestInput } from './sdk-faults.js';

// The operations commands on a standard or fair queue (DESIGN §5.1): no deduplication id, which a
// standard queue refuses, and a group only where the message has one. The FIFO cases are in the
// dlq-*.test.ts and in-doubt-*.test.ts files beside this one.

let sqs: SQSClient;
const queues: FifoQueue[] = [];
beforeAll(() => {
  sqs = localSqsClient();
});
afterAll(async () => {
  await deleteQueues(sqs, queues);
  sqs.destroy();
});

/** A standard queue and its standard DLQ, as the redrive reads them. */
async function standardPipeline() {
  const [queue, dlq] = await Promise.all([createStandardQueue(sqs), createStandardQueue(sqs)]);
  queues.push(queue, dlq);
  return { queueUrl: queue.url, dlqUrl: dlq.url, idempotencyTtlSeconds: TTL_SECONDS };
}

const DLQ_REASON: Record<string, MessageAttributeValue> = {
  ErrorName: { DataType: 'String', StringValue: 'HandlerError' },
  ReceiveCount: { DataType: 'Number', StringValue: '3' },
};

/**
 * Dead-letters `key` as the standard consumer does: a group only on a fair queue (`groupId` not
 * `''`; a plain queue's message came from a producer that sent none, its envelope's group aside).
 */
async function deadLetter(dlqUrl: string, key: string, groupId: string, publishedAt?: string) {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: dlqUrl,
      MessageBody: envelopeBody(key, 'producer-group', publishedAt),
      ...(groupId ? { MessageGroupId: groupId } : {}),
      MessageAttributes: DLQ_REASON,
    }),
  );
}

const isSendBatch = (queueUrl: string) => (input: RequestInput) =>
  input.QueueUrl === queueUrl && Array.isArray(input.Entries) && 'MessageBody' in (input.Entries[0] ?? {});

describe('oncely dlq redrive to a standard queue', () => {
  it("moves a plain queue's messages without a group, a fair queue's with theirs, none with a deduplication id", async () => {
    const pipeline = await standardPipeline();
    for (let i = 0; i < 6; i++) await deadLetter(pipeline.dlqUrl, `plain-${i}`, '');
    for (let i = 0; i < 6; i++) await deadLetter(pipeline.dlqUrl, `fair-${i}`, 'tenant-a');
    await deadLetter(pipeline.dlqUrl, 'past', '', PAST);

    const result = await redriveDeadLetters(sqs, pipeline);

    expect(result).toMatchObject({ finished: true, moved: 12, skipped: [{ groupId: '', key: 'past' }] });
    expect(describeRedrive(result, pipeline.queueUrl)).toContain('(no group, key past)');
    const moved = await drainQueue(sqs, pipeline.queueUrl, 12); // and not one more
    expect(moved.map((message) => message.deduplicationId)).toEqual(moved.map(() => undefined));
    const groups = new Map(moved.map((message) => [message.envelope.key, message.groupId]));
    for (let i = 0; i < 6; i++) {
      expect(groups.get(`plain-${i}`)).toBeUndefined();
      expect(groups.get(`fair-${i}`)).toBe('tenant-a');
    }
    const left = await drainQueue(sqs, pipeline.dlqUrl, 1); // the past-horizon message only, in place
    expect(left.map((message) => message.envelope.key)).toEqual(['past']);
  });

  it('a send that fails before SQS has it moves nothing; a second run moves each message once', async () => {
    const pipeline = await standardPipeline();
    for (let i = 0; i < 3; i++) await deadLetter(pipeline.dlqUrl, `cut-${i}`, '');
    const failing = localSqsClient();
    beforeRequests(failing, once(isSendBatch(pipeline.queueUrl)), fail);

    await expect(redriveDeadLetters(failing, pipeline)).rejects.toThrow(RedriveInterruptedError);
    expect(await redriveDeadLetters(sqs, pipeline)).toMatchObject({ finished: true, moved: 3 });

    const moved = await drainQueue(sqs, pipeline.queueUrl, 3); // and not one more
    expect(moved.map((message) => message.envelope.key).sort()).toEqual(['cut-0', 'cut-1', 'cut-2']);
    await drainQueue(sqs, pipeline.dlqUrl, 0);
    failing.destroy();
  });

  it('a send applied whose answer was lost is sent again by the SDK: two copies on the queue, one key each, for the consumer', async () => {
    const pipeline = await standardPipeline();
    for (let i = 0; i < 3; i++) await deadLetter(pipeline.dlqUrl, `lost-${i}`, 'tenant-b');
    const losing = localSqsClient(); // the SDK's own retries, as the command's client has them
    const lost = loseAnswers(
      losing,
      (operation, input) => operation === 'SendMessageBatch' && isSendBatch(pipeline.queueUrl)(input),
    );

    const result = await redriveDeadLetters(losing, pipeline);

    // On a FIFO queue the retry carries the same deduplication ids and SQS drops it.
    expect(lost.lost).toBe(1);
    expect(result).toMatchObject({ finished: true, moved: 3 });
    const moved = await drainQueue(sqs, pipeline.queueUrl, 6); // and not one more
    for (let i = 0; i < 3; i++) {
      expect(moved.filter((message) => message.envelope.key === `lost-${i}`)).toHaveLength(2);
    }
    await drainQueue(sqs, pipeline.dlqUrl, 0);
    losing.destroy();
  });
});

describe('oncely dlq discard on a standard DLQ', () => {
  // Issue 42, item 6: its records written slowly, the discard's hold ran out and another receive got
  // the message; the delete with the old receipt handle "succeeded" without deleting, and the
  // message was reported discarded while it stayed in the DLQ, for the next redrive to run.
  it('neither deletes nor reports discarded a message received again by another while its record was written', async () => {
    const { dlqUrl } = await standardPipeline();
    await deadLetter(dlqUrl, 'slow', '', PAST);
    const { Messages: [peeked] = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: dlqUrl, VisibilityTimeout: 0 }),
    );
    const messageId = String(peeked?.MessageId);
    const dynamodb = localDynamoClient();
    const idempotencyTableName = await createTable(dynamodb, 'discard-standard');
    const discarding = localSqsClient();
    // Once the discard holds the message, its hold runs out (as after 60 s of slow writes) and a
    // colleague's listing receives it, with a receipt handle of its own.
    discarding.middlewareStack.add(
      (next, context) => async (args) => {
        const output = await next(args);
        if (context.commandName !== 'ReceiveMessageCommand') return output;
        for (const { ReceiptHandle } of (output.output as { Messages?: { ReceiptHandle?: string }[] })
          .Messages ?? []) {
          await sqs.send(
            new ChangeMessageVisibilityCommand({ QueueUrl: dlqUrl, ReceiptHandle, VisibilityTimeout: 0 }),
          );
          await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, VisibilityTimeout: 120 }));
        }
        return output;
      },
      { step: 'initialize', name: 'holdRunsOut' },
    );

    const result = await discardDeadLetters(
      { sqs: discarding, dynamodb },
      { dlqUrl, idempotencyTableName },
      [messageId],
      'refunded',
      { timeoutMs: 2_000 },
    );

    expect(result).toMatchObject({ discarded: [], alreadyDiscarded: [], notFound: [messageId], hidden: 1 });
    expect(await messagesInQueue(sqs, dlqUrl)).toBe(1);
    // No record says it was discarded: the next discard, once the colleague lets go, does it.
    expect(await readItem(idempotencyTableName, `oncely/discarded#${messageId}`)).toBeUndefined();
    discarding.destroy();
    dynamodb.destroy();
  });
});

describe('oncely in-doubt resolve --as retry to a standard queue', () => {
  let target: Awaited<ReturnType<typeof inDoubtPipeline>>;
  beforeAll(async () => {
    target = await inDoubtPipeline({ standard: true });
  });
  afterAll(() => target?.close());

  it.each([
    ['a plain queue', ''],
    ['a fair queue', 'tenant-c'],
  ])(
    "sends %s's kept message with its group only if it has one, without a deduplication id",
    async (_, groupId) => {
      const id = await park(target, `retry-${groupId || 'plain'}`, {
        message: { body: envelope('kept', 'producer-group'), groupId },
      });

      const resolution = await resolveAsRetry(target, id);

      expect(resolution).toMatchObject({ as: 'retry', groupId, status: 'FAILED' });
      expect(describeResolution(resolution, 'queue')).toContain(
        groupId ? `(group ${groupId}, ` : '(no group, ',
      );
      const [sent] = await drainQueue(sqs, target.resources.queueUrl, 1); // and not one more
      expect(sent).toMatchObject({
        messageId: (resolution as { messageId: string }).messageId,
        deduplicationId: undefined,
      });
      expect(sent?.groupId).toBe(groupId || undefined);
      expect(await readItem(target.resources.idempotencyTableName, id)).toMatchObject({ status: 'FAILED' });
    },
  );

  it('a send that fails before SQS has it leaves the record RETRY_PENDING with its message; run again, sent once', async () => {
    const id = await park(target, 'retry-cut', {
      message: { body: envelope('cut', 'producer-group'), groupId: '' },
    });
    const failing = await inDoubtPipeline({ standard: true });
    failing.resources = target.resources;
    beforeRequests(
      failing.sqs,
      once((input) => input.QueueUrl === target.resources.queueUrl),
      fail,
    );

    await expect(resolveAsRetry(failing, id)).rejects.toThrow(ResendFailedError);
    expect(await readItem(target.resources.idempotencyTableName, id)).toMatchObject({
      status: 'FAILED',
      unresolved: 'RETRY_PENDING',
    });
    expect(await resolveAsRetry(target, id)).toMatchObject({ status: 'FAILED' });

    await drainQueue(sqs, target.resources.queueUrl, 1); // and not one more
    failing.close();
  });

  it('a send applied whose answer was lost leaves two copies: the consumer runs one, the other is a duplicate', async () => {
    const id = await park(target, 'retry-lost', {
      message: { body: envelope('lost', 'producer-group'), groupId: '' },
    });
    const losing = await inDoubtPipeline({ standard: true });
    losing.resources = target.resources;
    const lost = loseAnswers(losing.sqs, (operation) => operation === 'SendMessage');

    const resolution = await resolveAsRetry(losing, id);

    expect(lost.lost).toBe(1);
    expect(resolution).toMatchObject({ status: 'FAILED' });
    const copies = await drainQueue(sqs, target.resources.queueUrl, 2); // and not one more
    expect(copies.map((copy) => copy.envelope.key)).toEqual(['lost', 'lost']);
    losing.close();
  });
});

import type { SendMessageBatchCommandInput, SendMessageBatchCommandOutput } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redriveDeadLetters } from '../../cli/dead-letter-redrive.js';
import { RedriveInterruptedError } from '../../cli/operations-errors.js';
import { sqsMessageBytes } from '../../lambdas/common/message-size.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import { createQueueWithDlq, deleteQueues, localSqsClient, receiveMessages } from '../support/sqs.js';
import {
  type DlqWorld,
  deadLetter,
  drain,
  envelopeBody,
  PAST,
  startDlqWorld,
  TTL_SECONDS,
} from './dlq-fifo.js';
import { beforeRequests, fail, once, type RequestInput } from './sdk-faults.js';

// Items 9a and 5 of issue 31: a redrive sends and deletes in batches, keeping each group's order and
// losing nothing to a failure; it leaves a message past the dedup horizon where it is (not re-sent,
// which would reset its retention), and the rest of its group moves on past it.

let world: DlqWorld;
beforeAll(async () => {
  world = await startDlqWorld();
});
afterAll(() => world?.stop());

/** Counts `client`'s requests by the command's name. */
function countRequests(client: ReturnType<DlqWorld['client']>): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String(context.commandName);
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'countRequests' },
  );
  return counts;
}

const keys = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}`);

describe('dlq redrive in batches', () => {
  it("sends each message back with the producer's trace context: its traceparent and its X-Ray header (DESIGN §6)", async () => {
    const pipeline = await world.pipeline();
    const traceparent = {
      DataType: 'String',
      StringValue: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    };
    const header = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
    const errorName = { DataType: 'String', StringValue: 'HandlerError' };
    await deadLetter(
      world.sqs,
      pipeline.dlqUrl,
      envelopeBody('traced', 'traced'),
      'traced',
      { traceparent, ErrorName: errorName },
      header,
    );

    await redriveDeadLetters(world.client(), pipeline);

    const [moved] = await receiveMessages(world.sqs, pipeline.queueUrl, 1);
    expect(moved?.MessageAttributes?.traceparent?.StringValue).toBe(traceparent.StringValue);
    expect(moved?.MessageAttributes?.ErrorName).toBeUndefined();
    expect(moved?.Attributes?.AWSTraceHeader).toBe(header);
  });

  it('moves a 25-message group in order with batch requests, past two past-horizon messages it leaves in place', async () => {
    const pipeline = await world.pipeline();
    const ids = new Map<string, string>();
    for (const key of keys('long', 25)) {
      const past = key === 'long-00' || key === 'long-12';
      ids.set(
        key,
        await deadLetter(
          world.sqs,
          pipeline.dlqUrl,
          envelopeBody(key, 'long', past ? PAST : undefined),
          'long',
        ),
      );
    }
    for (const key of keys('short', 3))
      await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody(key, key), key);
    const client = world.client();
    const requests = countRequests(client);

    const result = await redriveDeadLetters(client, pipeline);

    const moved = await drain(world.sqs, pipeline.queueUrl);
    expect(moved.filter((m) => m.groupId === 'long').map((m) => m.key)).toEqual(
      keys('long', 25).filter((key) => key !== 'long-00' && key !== 'long-12'),
    );
    expect(moved).toHaveLength(26);
    // Left in place: the very messages, not copies (a copy would reset their 14-day retention).
    const left = await drain(world.sqs, pipeline.dlqUrl);
    expect(left.map((m) => [m.key, m.messageId])).toEqual([
      ['long-00', ids.get('long-00')],
      ['long-12', ids.get('long-12')],
    ]);
    expect(result).toMatchObject({ finished: true, moved: 26, returned: 0, left: 0, hidden: 0 });
    expect(result.skipped).toEqual([
      { messageId: ids.get('long-00'), groupId: 'long', key: 'long-00', reason: 'past-dedup-horizon' },
      { messageId: ids.get('long-12'), groupId: 'long', key: 'long-12', reason: 'past-dedup-horizon' },
    ]);
    expect([requests.get('SendMessageCommand'), requests.get('DeleteMessageCommand')]).toEqual([
      undefined,
      undefined,
    ]);
    // A send per message (one message of a group per call); a delete per receive: 3 for the group
    // (9, 9, 6 past its held messages), 3 for the single ones.
    expect(requests.get('SendMessageBatchCommand')).toBe(26);
    expect(requests.get('DeleteMessageBatchCommand')).toBe(6);
  });

  it("splits a receive's messages into SendMessageBatches of at most SQS's 1 MiB together, in order", async () => {
    // Ten messages of 200 KiB over ten groups, on the run's shared emulator, whose receive hands
    // out several groups at once: 2 MB, more than one batch may carry, and more than one message per
    // batch fits (one message of a group each).
    const sqs = localSqsClient(1);
    const { queue, dlq } = await createQueueWithDlq(sqs, {
      visibilityTimeoutSeconds: 30,
      maxReceiveCount: 5,
    });
    const pipeline = { queueUrl: queue.url, dlqUrl: dlq.url, idempotencyTtlSeconds: TTL_SECONDS };
    try {
      for (const key of keys('big', 10)) {
        const envelope = envelopeBody(key, key);
        await deadLetter(sqs, dlq.url, `${envelope.slice(0, -1)},"pad":"${'p'.repeat(200 * 1024)}"}`, key);
      }
      const batches: number[][] = [];
      sqs.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName === 'SendMessageBatchCommand') {
            const { Entries = [] } = args.input as { Entries?: { MessageBody?: string }[] };
            batches.push(Entries.map((entry) => Buffer.byteLength(entry.MessageBody ?? '')));
          }
          return next(args);
        },
        { step: 'initialize', name: 'recordBatches' },
      );

      const result = await redriveDeadLetters(sqs, pipeline);

      expect(result).toMatchObject({ finished: true, moved: 10 });
      expect((await drain(sqs, queue.url)).map((m) => m.key).sort()).toEqual(keys('big', 10));
      expect(batches.flat()).toHaveLength(10);
      for (const batch of batches) expect(batch.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1024 * 1024);
      expect(Math.max(...batches.map((batch) => batch.length))).toBeGreaterThan(1);
    } finally {
      await deleteQueues(sqs, [queue, dlq]);
      sqs.destroy();
    }
  });

  it("moves a message at SQS's limits (10 attributes, 256 KiB) with its producer's attributes only; adds none to one it leaves", async () => {
    const pipeline = await world.pipeline();
    const text = (value: string) => ({ DataType: 'String', StringValue: value });
    const producer = Object.fromEntries(
      Array.from({ length: 6 }, (_, i) => [`attr${i}`, text(`value-${i}`)]),
    );
    const dlqAttributes = {
      ErrorName: text('HandlerError'),
      ErrorMessage: text('failed'),
      OriginalMessageId: text('original'),
      ReceiveCount: { DataType: 'Number', StringValue: '3' },
    };
    const attributes = { ...producer, ...dlqAttributes };
    const attributeBytes = sqsMessageBytes('', attributes);
    // The body fills the rest of 256 KiB: the message is at both limits in the DLQ.
    const envelope = envelopeBody('full', 'full');
    const body = `${envelope.slice(0, -1)},"pad":"${'p'.repeat(256 * 1024 - attributeBytes - envelope.length - 9)}"}`;
    expect(sqsMessageBytes(body, attributes)).toBe(256 * 1024);
    await deadLetter(world.sqs, pipeline.dlqUrl, body, 'full', attributes);
    // Past the horizon with 10 attributes of its own (SQS moved it: none of the DLQ's). Re-sending it
    // marked, as a redrive did, took 12 attributes, which SQS refuses: it stopped every redrive there.
    const tenOwn = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`own${i}`, text(`value-${i}`)]));
    const pastId = await deadLetter(
      world.sqs,
      pipeline.dlqUrl,
      envelopeBody('old', 'old', PAST),
      'old',
      tenOwn,
    );

    expect(await redriveDeadLetters(world.sqs, pipeline)).toMatchObject({
      finished: true,
      moved: 1,
      skipped: [{ messageId: pastId }],
    });
    const [moved] = await receiveMessages(world.sqs, pipeline.queueUrl, 1);
    expect(moved?.Body).toBe(body);
    expect(Object.keys(moved?.MessageAttributes ?? {}).sort()).toEqual(Object.keys(producer).sort());
  });

  it('a redrive again leaves the past-horizon messages as they are: same ids, not sent anywhere', async () => {
    const pipeline = await world.pipeline();
    const id = await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody('old', 'old', PAST), 'old');
    for (const run of [1, 2]) {
      const result = await redriveDeadLetters(world.sqs, pipeline);
      expect({ run, result }).toMatchObject({
        run,
        result: { finished: true, moved: 0, skipped: [{ messageId: id }] },
      });
    }
    expect((await drain(world.sqs, pipeline.dlqUrl)).map((m) => m.messageId)).toEqual([id]);
    expect(await drain(world.sqs, pipeline.queueUrl)).toEqual([]);
  });

  it('a send batch that fails moves nothing of it; a delete batch that fails leaves copies SQS drops; a second run finishes', async () => {
    const pipeline = await world.pipeline();
    for (const key of keys('cut', 4))
      await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody(key, 'cut'), 'cut');
    const isSendBatch = (input: RequestInput) => input.QueueUrl === pipeline.queueUrl && 'Entries' in input;
    const isDeleteBatch = (input: RequestInput) =>
      input.QueueUrl === pipeline.dlqUrl &&
      Array.isArray(input.Entries) &&
      !('VisibilityTimeout' in (input.Entries[0] ?? {}));

    const sendFails = world.client();
    beforeRequests(sendFails, once(isSendBatch), fail);
    await expect(redriveDeadLetters(sendFails, pipeline)).rejects.toThrow(
      /^The redrive stopped after moving 0 messages: sending message \S+ \(group cut\) failed \(Error: injected: the connection dropped\)\. What was not moved is still in the DLQ, each group in order/,
    );
    expect(await drain(world.sqs, pipeline.queueUrl)).toEqual([]);

    // Sent, then the delete fails (as a crash between the two): the messages are in both queues.
    const deleteFails = world.client();
    beforeRequests(deleteFails, once(isDeleteBatch), fail);
    const error = await redriveDeadLetters(deleteFails, pipeline).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(RedriveInterruptedError);
    expect((error as Error).message).toMatch(/: deleting message \S+ \(group cut\) failed/);

    expect(await redriveDeadLetters(world.sqs, pipeline)).toMatchObject({ finished: true, moved: 4 });
    // The second run's sends carry the same deduplication ids: SQS kept one copy of each, in order.
    expect((await drain(world.sqs, pipeline.queueUrl)).map((m) => m.key)).toEqual(keys('cut', 4));
    expect(await drain(world.sqs, pipeline.dlqUrl)).toEqual([]);
  });

  // Issue 42, item 9: SQS may fail an earlier message of a group and accept a later one in the same
  // SendMessageBatch. The redrive then stopped, and its next run sent the earlier one behind it.
  it('keeps a group in order when SQS refuses its first message and would accept the next in the same call', async () => {
    const pipeline = await world.pipeline();
    for (const key of keys('refused', 3))
      await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody(key, 'refused'), 'refused');
    const client = world.client();
    let refused = false;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as SendMessageBatchCommandInput;
        if (
          refused ||
          context.commandName !== 'SendMessageBatchCommand' ||
          input.QueueUrl !== pipeline.queueUrl
        )
          return next(args);
        refused = true;
        const [first, ...rest] = input.Entries ?? [];
        const failed = { Id: first?.Id, Code: 'InternalError', SenderFault: false, Message: 'injected' };
        if (rest.length === 0)
          return { output: { $metadata: {}, Successful: [], Failed: [failed] }, response: {} };
        const result = await next({ ...args, input: { ...input, Entries: rest } });
        const output = result.output as SendMessageBatchCommandOutput;
        return { ...result, output: { ...output, Failed: [...(output.Failed ?? []), failed] } };
      },
      { step: 'initialize', name: 'refuseFirstEntryOnce' },
    );

    await expect(redriveDeadLetters(client, pipeline)).rejects.toThrow(
      /: sending message \S+ \(group refused\) failed \(Error: InternalError: injected\)/,
    );
    expect(await redriveDeadLetters(client, pipeline)).toMatchObject({ finished: true, moved: 3 });

    // None of the group went ahead of its refused first message.
    expect((await drain(world.sqs, pipeline.queueUrl)).map((m) => m.key)).toEqual(keys('refused', 3));
  });

  // Issue 42, item 9: a delete batch that SQS answered in part said "after moving 0 messages" though
  // it had deleted some of them: those are moved.
  it('counts as moved the messages a partly failed delete batch deleted, and the others as sent, perhaps still in the DLQ', async () => {
    const pipeline = await world.pipeline();
    for (const key of keys('part', 4))
      await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody(key, 'part'), 'part');
    const client = world.client();
    let spoiled = false;
    // SQS refuses the second entry's receipt handle (as one gone stale), and deletes the others.
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as {
          QueueUrl?: string;
          Entries?: { ReceiptHandle?: string; VisibilityTimeout?: number }[];
        };
        const second = input.Entries?.[1];
        if (!spoiled && input.QueueUrl === pipeline.dlqUrl && second && !('VisibilityTimeout' in second)) {
          spoiled = true;
          second.ReceiptHandle = 'stale-receipt-handle';
        }
        return next(args);
      },
      { step: 'initialize', name: 'spoilOneDelete' },
    );
    const error = await redriveDeadLetters(client, pipeline).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(RedriveInterruptedError);
    expect((error as Error).message).toMatch(
      /^The redrive stopped after moving 3 messages, and sending 1 more that may still be in the DLQ: deleting message \S+ \(group part\) failed/,
    );
    expect(await messagesInQueue(world.sqs, pipeline.dlqUrl)).toBe(1);
  });
});

import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type ReceiveMessageCommandInput,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../cli/command-line.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import { startSqsEmulator } from '../sandbox/sqs-emulator.js';
import {
  ensureSqsEmulatorPatched,
  patchSqsEmulatorBundle,
  SQS_EMULATOR_REPLACEMENTS,
  SqsEmulatorPatchError,
} from '../sandbox/sqs-emulator-patch.js';
import { emulatorEndpoint } from './support/emulator-endpoint.js';

// Conformance of the patched local-aws-sqs emulator with the SQS FIFO semantics Oncely relies on
// (DESIGN.md §2, §5). Every test owns its queues, so the tests run concurrently.

const sqs = new SQSClient(localAwsConfig(emulatorEndpoint('sqsEndpoint')));
const queueUrls: string[] = [];

afterAll(async () => {
  await Promise.all(queueUrls.map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl }))));
  sqs.destroy();
});

async function createFifoQueue(
  attributes: Record<string, string> = {},
  client = sqs,
): Promise<{ url: string; arn: string }> {
  return createQueue({ FifoQueue: 'true', ...attributes }, client);
}

async function createQueue(
  attributes: Record<string, string> = {},
  client = sqs,
): Promise<{ url: string; arn: string }> {
  const QueueName = `conformance-${randomUUID().slice(0, 8)}${attributes.FifoQueue ? '.fifo' : ''}`;
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName, Attributes: attributes }));
  if (!QueueUrl) throw new Error(`CreateQueue returned no QueueUrl for ${QueueName}`);
  if (client === sqs) queueUrls.push(QueueUrl);
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  if (!Attributes?.QueueArn) throw new Error(`GetQueueAttributes returned no QueueArn for ${QueueName}`);
  return { url: QueueUrl, arn: Attributes.QueueArn };
}

function send(
  QueueUrl: string,
  MessageBody: string,
  MessageGroupId: string,
  MessageDeduplicationId?: string,
  client = sqs,
) {
  return client.send(
    new SendMessageCommand({ QueueUrl, MessageBody, MessageGroupId, MessageDeduplicationId }),
  );
}

/** One ReceiveMessage; `AttributeNames: ['All']` is the only way the emulator returns system attributes. */
async function receive(
  QueueUrl: string,
  input: Partial<ReceiveMessageCommandInput> = {},
  client = sqs,
): Promise<Message[]> {
  const { Messages } = await client.send(
    new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, AttributeNames: ['All'], ...input }),
  );
  return Messages ?? [];
}

function deleteMessage(QueueUrl: string, message: Message, client = sqs) {
  return client.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: message.ReceiptHandle }));
}

/** Long-polls (and deletes) until `count` messages arrived or `timeoutMs` passed; returns them in order. */
async function receiveAll(QueueUrl: string, count: number, timeoutMs = 5_000): Promise<Message[]> {
  const received: Message[] = [];
  const deadline = Date.now() + timeoutMs;
  while (received.length < count && Date.now() < deadline) {
    for (const message of await receive(QueueUrl, { WaitTimeSeconds: 1 })) {
      received.push(message);
      await deleteMessage(QueueUrl, message);
    }
  }
  return received;
}

/** Polls `probe` until it returns a value, or fails after `timeoutMs`. */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function visibleCount(QueueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages);
}

async function inFlightCount(QueueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['ApproximateNumberOfMessagesNotVisible'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessagesNotVisible);
}

function changeVisibility(QueueUrl: string, message: Message | undefined, VisibilityTimeout: number) {
  return sqs.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl,
      ReceiptHandle: message?.ReceiptHandle,
      VisibilityTimeout,
    }),
  );
}

const bodies = (messages: Message[]) => messages.map((message) => message.Body);
const bodiesOfGroup = (messages: Message[], group: string) =>
  bodies(messages.filter((message) => message.Attributes?.MessageGroupId === group));

describe.concurrent('SQS emulator (FIFO conformance)', () => {
  it('drops a repeated MessageDeduplicationId for the window, even after the first was deleted', async ({
    expect,
  }) => {
    const { url } = await createFifoQueue();
    const first = await send(url, 'first', 'g', 'key-1');
    const repeat = await send(url, 'repeat', 'g', 'key-1');
    expect(repeat.MessageId).toBe(first.MessageId);
    expect(repeat.SequenceNumber).toBe(first.SequenceNumber);

    const [delivered] = await receiveAll(url, 1);
    expect(delivered?.Body).toBe('first');

    // Once received and deleted the id is still remembered: a later message of the group is next.
    const afterDelete = await send(url, 'after delete', 'g', 'key-1');
    expect(afterDelete.MessageId).toBe(first.MessageId);
    await send(url, 'sentinel', 'g', 'key-2');
    expect(bodies(await receiveAll(url, 1))).toEqual(['sentinel']);
  });

  it('deduplicates per message group with DeduplicationScope=messageGroup, per queue otherwise', async ({
    expect,
  }) => {
    const perGroup = await createFifoQueue({ DeduplicationScope: 'messageGroup' });
    const a = await send(perGroup.url, 'a', 'group-a', 'same-key');
    const b = await send(perGroup.url, 'b', 'group-b', 'same-key');
    expect(b.MessageId).not.toBe(a.MessageId);
    expect(bodies(await receiveAll(perGroup.url, 2)).sort()).toEqual(['a', 'b']);

    const perQueue = await createFifoQueue({ DeduplicationScope: 'queue' });
    const c = await send(perQueue.url, 'c', 'group-a', 'same-key');
    const d = await send(perQueue.url, 'd', 'group-b', 'same-key');
    expect(d.MessageId).toBe(c.MessageId);
    await send(perQueue.url, 'sentinel', 'group-b', 'other-key');
    expect(bodies(await receiveAll(perQueue.url, 2))).toEqual(['c', 'sentinel']);
  });

  it('deduplicates identical bodies with ContentBasedDeduplication', async ({ expect }) => {
    const { url } = await createFifoQueue({ ContentBasedDeduplication: 'true' });
    const first = await send(url, 'same body', 'g');
    const repeat = await send(url, 'same body', 'g');
    const other = await send(url, 'other body', 'g');
    expect(repeat.MessageId).toBe(first.MessageId);
    expect(other.MessageId).not.toBe(first.MessageId);
    expect(bodies(await receiveAll(url, 2))).toEqual(['same body', 'other body']);
  });

  it('returns nothing of a group while one of its messages is in flight, but serves other groups', async ({
    expect,
  }) => {
    const { url } = await createFifoQueue();
    await send(url, 'a1', 'A', 'a1');
    await send(url, 'a2', 'A', 'a2');
    await send(url, 'b1', 'B', 'b1');

    const [a1] = await receive(url, { MaxNumberOfMessages: 1 });
    expect(a1?.Body).toBe('a1');
    expect(bodies(await receive(url))).toEqual(['b1']);
    expect(await receive(url)).toEqual([]);

    if (!a1) throw new Error('a1 was not received');
    await deleteMessage(url, a1);
    expect(bodies(await receive(url))).toEqual(['a2']);
  });

  it('redelivers a group in order once the visibility timeout expires', async ({ expect }) => {
    const { url } = await createFifoQueue({ VisibilityTimeout: '1' });
    await send(url, 'a1', 'A', 'a1');
    await send(url, 'a2', 'A', 'a2');
    expect(bodies(await receive(url, { MaxNumberOfMessages: 1 }))).toEqual(['a1']);

    const redelivered = await receiveAll(url, 2);
    expect(bodies(redelivered)).toEqual(['a1', 'a2']);
    expect(redelivered.map((message) => message.Attributes?.ApproximateReceiveCount)).toEqual(['2', '1']);
  });

  it('may return several messages of one group in one receive, in order', async ({ expect }) => {
    const { url } = await createFifoQueue();
    for (const body of ['a1', 'a2', 'a3', 'a4', 'a5']) await send(url, body, 'A', body);
    expect(bodies(await receive(url))).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
  });

  it('answers a long poll as soon as a message arrives', async ({ expect }) => {
    const { url } = await createFifoQueue();
    // Send only once the receive request is on the wire: the deserialize step is the last before it.
    let requestSent!: () => void;
    const sent = new Promise<void>((resolve) => (requestSent = resolve));
    const command = new ReceiveMessageCommand({
      QueueUrl: url,
      WaitTimeSeconds: 20,
      MaxNumberOfMessages: 10,
    });
    command.middlewareStack.add(
      (next) => (args) => {
        requestSent();
        return next(args);
      },
      { step: 'deserialize' },
    );
    const startedAt = Date.now();
    const receiving = sqs.send(command);
    await sent;
    await send(url, 'hello', 'g', 'hello');

    const { Messages } = await receiving;
    expect(bodies(Messages ?? [])).toEqual(['hello']);
    // The point is not waiting out WaitTimeSeconds (20 s) for MaxNumberOfMessages; half of it is a
    // bound no busy machine reaches.
    expect(Date.now() - startedAt).toBeLessThan(10_000);
  });

  it('moves a message to the FIFO DLQ after maxReceiveCount, keeping body and group', async ({ expect }) => {
    const dlq = await createFifoQueue();
    const source = await createFifoQueue({
      VisibilityTimeout: '1',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 2 }),
    });
    const sent = await send(source.url, 'poison', 'G', 'poison-key');

    const receiveCounts: (string | undefined)[] = [];
    const [dead] = await waitFor('the message to reach the DLQ', async () => {
      // Receive without deleting, as a failing consumer does.
      for (const message of await receive(source.url, { WaitTimeSeconds: 1 })) {
        receiveCounts.push(message.Attributes?.ApproximateReceiveCount);
      }
      const dlqMessages = await receive(dlq.url);
      return dlqMessages.length ? dlqMessages : undefined;
    });
    expect(receiveCounts).toEqual(['1', '2']);
    expect(dead?.Body).toBe('poison');
    expect(dead?.MessageId).toBe(sent.MessageId);
    expect(dead?.Attributes?.MessageGroupId).toBe('G');
    // DESIGN §2: the DLQ copy's dedup id is its message id, so a redrive is not dropped as a duplicate.
    expect(dead?.Attributes?.MessageDeduplicationId).toBe(dead?.MessageId);
  });

  it('keeps the per-group order of a SendMessageBatch', async ({ expect }) => {
    const { url } = await createFifoQueue();
    const entries = Array.from({ length: 10 }, (_, i) => {
      const body = `${i % 2 ? 'B' : 'A'}${Math.floor(i / 2)}`;
      return { Id: `e${i}`, MessageBody: body, MessageGroupId: body[0], MessageDeduplicationId: body };
    });
    const { Successful, Failed } = await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }),
    );
    expect(Failed ?? []).toEqual([]);
    expect(Successful).toHaveLength(10);

    const received = await receiveAll(url, 10);
    expect(bodiesOfGroup(received, 'A')).toEqual(['A0', 'A1', 'A2', 'A3', 'A4']);
    expect(bodiesOfGroup(received, 'B')).toEqual(['B0', 'B1', 'B2', 'B3', 'B4']);
  });

  it('redrives DLQ messages back to the source queue with StartMessageMoveTask, in group order', async ({
    expect,
  }) => {
    const dlq = await createFifoQueue();
    const source = await createFifoQueue({
      VisibilityTimeout: '1',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }),
    });
    await send(source.url, 'a1', 'A', 'a1');
    await send(source.url, 'a2', 'A', 'a2');
    await send(source.url, 'b1', 'B', 'b1');
    // Received once and never deleted: all three go to the DLQ when their visibility expires.
    expect(await receive(source.url)).toHaveLength(3);
    await waitFor('three messages in the DLQ', async () =>
      (await visibleCount(dlq.url)) === 3 ? true : undefined,
    );

    // Within the 5-minute dedup window of the original sends: they must still be delivered.
    await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlq.arn }));
    const redriven = await receiveAll(source.url, 3);
    expect(bodiesOfGroup(redriven, 'A')).toEqual(['a1', 'a2']);
    expect(bodiesOfGroup(redriven, 'B')).toEqual(['b1']);
    expect(await visibleCount(dlq.url)).toBe(0);
  });

  it('does not count ChangeMessageVisibility, nor its batch, as a receive: a heartbeat keeps a message out of the DLQ', async ({
    expect,
  }) => {
    const dlq = await createFifoQueue();
    const source = await createFifoQueue({
      VisibilityTimeout: '1',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 2 }),
    });
    await send(source.url, 'beating', 'G', 'beating');
    const [first] = await receive(source.url);
    expect(first?.Attributes?.ApproximateReceiveCount).toBe('1');
    for (let beat = 0; beat < 3; beat++) await changeVisibility(source.url, first, 30);
    const { Failed } = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: source.url,
        Entries: [{ Id: 'beat', ReceiptHandle: first?.ReceiptHandle, VisibilityTimeout: 30 }],
      }),
    );
    expect(Failed ?? []).toEqual([]);
    // Backed off: visible again at once, as a consumer that releases a record makes it.
    await changeVisibility(source.url, first, 0);

    const [second] = await waitFor('the second delivery', async () => {
      const messages = await receive(source.url, { WaitTimeSeconds: 1 });
      return messages.length ? messages : undefined;
    });
    expect(second?.Body).toBe('beating');
    expect(second?.Attributes?.ApproximateReceiveCount).toBe('2');
    expect(await visibleCount(dlq.url)).toBe(0);
  });

  it('refuses a visibility timeout past 12 hours from the receive, and a change to a message not in flight', async ({
    expect,
  }) => {
    const fifo = await createFifoQueue();
    await send(fifo.url, 'long', 'G', 'long');
    const [message] = await receive(fifo.url);
    await changeVisibility(fifo.url, message, 43_000);
    // 43,200 s from now ends after 12 hours from the receive, which was at least a request ago.
    await expect(changeVisibility(fifo.url, message, 43_200)).rejects.toThrow(
      /Total VisibilityTimeout for the message is beyond the limit \[43200 seconds\]/,
    );

    const standard = await createQueue();
    await sqs.send(new SendMessageCommand({ QueueUrl: standard.url, MessageBody: 'released' }));
    const [released] = await receive(standard.url);
    await changeVisibility(standard.url, released, 0);
    await expect(changeVisibility(standard.url, released, 10)).rejects.toMatchObject({
      name: 'MessageNotInflight',
    });
  });

  it('gives each receive of a standard queue’s message its own receipt handle: an earlier one deletes nothing, and its visibility change is refused', async ({
    expect,
  }) => {
    const standard = await createQueue();
    await sqs.send(new SendMessageCommand({ QueueUrl: standard.url, MessageBody: 'twice' }));
    const [first] = await receive(standard.url);
    await changeVisibility(standard.url, first, 0);
    const [second] = await receive(standard.url);
    expect(second?.ReceiptHandle).not.toBe(first?.ReceiptHandle);
    expect(second?.Attributes?.ApproximateReceiveCount).toBe('2');

    // SQS (API_DeleteMessage): with an earlier handle "the request succeeds, but the message might
    // not be deleted"; the emulator takes the harsher side: it is not.
    await deleteMessage(standard.url, first as Message);
    expect(await inFlightCount(standard.url)).toBe(1);
    await expect(changeVisibility(standard.url, first, 0)).rejects.toMatchObject({
      name: 'ReceiptHandleIsInvalid',
    });
    const { Failed } = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: standard.url,
        Entries: [{ Id: 'stale', ReceiptHandle: first?.ReceiptHandle, VisibilityTimeout: 0 }],
      }),
    );
    expect(Failed).toEqual([expect.objectContaining({ Id: 'stale', Code: 'ReceiptHandleIsInvalid' })]);
    expect(await visibleCount(standard.url)).toBe(0);

    // The latest handle does both.
    await changeVisibility(standard.url, second, 30);
    await deleteMessage(standard.url, second as Message);
    expect(await inFlightCount(standard.url)).toBe(0);
    expect(await visibleCount(standard.url)).toBe(0);
  });

  it('counts a message’s size in UTF-8 bytes, its attributes’ names, types and values included', async ({
    expect,
  }) => {
    const tooBig = /One or more parameters are invalid\. Reason: Message must be shorter than 1024 bytes\./;
    const fifo = await createFifoQueue({ MaximumMessageSize: '1024' });
    // 400 characters, 1,200 bytes.
    await expect(send(fifo.url, '€'.repeat(400), 'G', 'euros')).rejects.toThrow(tooBig);
    // 900 bytes of body, 4 + 6 + 120 of attribute: 1,030 bytes.
    const attributes = { note: { DataType: 'String', StringValue: 'é'.repeat(60) } };
    await expect(
      sqs.send(
        new SendMessageCommand({
          QueueUrl: fifo.url,
          MessageBody: '€'.repeat(300),
          MessageAttributes: attributes,
          MessageGroupId: 'G',
          MessageDeduplicationId: 'noted',
        }),
      ),
    ).rejects.toThrow(tooBig);
    await send(fifo.url, '€'.repeat(300), 'G', 'fits');

    const standard = await createQueue({ MaximumMessageSize: '1024' });
    const { Successful, Failed } = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: standard.url,
        Entries: [
          { Id: 'fits', MessageBody: '€'.repeat(300) },
          { Id: 'too-big', MessageBody: '€'.repeat(300), MessageAttributes: attributes },
        ],
      }),
    );
    expect(Successful?.map((entry) => entry.Id)).toEqual(['fits']);
    expect(Failed).toMatchObject([{ Id: 'too-big', Code: 'InvalidParameterValue', SenderFault: true }]);
    expect(Failed?.[0]?.Message).toMatch(tooBig);
  });

  it('returns as many messages of one group as it can, the oldest group first, then other groups', async ({
    expect,
  }) => {
    const { url } = await createFifoQueue();
    for (const [body, group] of ['A1', 'B1', 'A2', 'B2', 'A3', 'C1'].map((b) => [b, b[0] ?? ''])) {
      await send(url, body, group, body);
    }
    expect(bodies(await receive(url, { MaxNumberOfMessages: 2 }))).toEqual(['A1', 'A2']);
    expect(bodies(await receive(url))).toEqual(['B1', 'B2', 'C1']);
  });

  it('with oneGroupPerReceive (harsher than SQS), returns one group’s run per receive', async ({
    expect,
  }) => {
    // What `oncely local --one-group-per-receive` asks of the sandbox's emulator.
    expect(parseCommandLine(['local', '--one-group-per-receive'], {})).toMatchObject({
      options: { oneGroupPerReceive: true },
    });
    const strict = await startSqsEmulator({ oneGroupPerReceive: true });
    const client = new SQSClient(localAwsConfig(strict.endpoint));
    try {
      const { url } = await createFifoQueue({}, client);
      for (const body of ['A1', 'B1', 'A2', 'B2', 'A3', 'C1'])
        await send(url, body, body[0] ?? '', body, client);
      for (const run of [['A1', 'A2', 'A3'], ['B1', 'B2'], ['C1']]) {
        const messages = await receive(url, {}, client);
        expect(bodies(messages)).toEqual(run);
        for (const message of messages) await deleteMessage(url, message, client);
      }
    } finally {
      client.destroy();
      await strict.stop();
    }
  });

  it('tells when the oldest message a queue holds was sent, in flight or not, for the sandbox’s CloudWatch', async ({
    expect,
  }) => {
    const own = await startSqsEmulator();
    const client = new SQSClient(localAwsConfig(own.endpoint));
    try {
      const { url } = await createFifoQueue({}, client);
      const name = new URL(url).pathname.split('/').pop() ?? '';
      expect(own.oldestSentAt().has(name)).toBe(false);
      await send(url, 'a1', 'A', 'a1', client);
      await send(url, 'b1', 'B', 'b1', client);
      const [first] = await receive(url, { MaxNumberOfMessages: 1 }, client);
      // In flight, it is still the oldest.
      expect(own.oldestSentAt().get(name)).toBe(Number(first?.Attributes?.SentTimestamp));
      if (first) await deleteMessage(url, first, client);
      const [second] = await receive(url, {}, client);
      expect(own.oldestSentAt().get(name)).toBe(Number(second?.Attributes?.SentTimestamp));
      if (second) await deleteMessage(url, second, client);
      expect(own.oldestSentAt().has(name)).toBe(false);
    } finally {
      client.destroy();
      await own.stop();
    }
  });

  it('counts in-flight messages in ApproximateNumberOfMessagesNotVisible, not in ApproximateNumberOfMessages', async ({
    expect,
  }) => {
    const { url } = await createFifoQueue();
    await send(url, 'a1', 'A', 'a1');
    await send(url, 'b1', 'B', 'b1');
    await receive(url, { MaxNumberOfMessages: 1 });
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    expect(Attributes).toMatchObject({
      ApproximateNumberOfMessages: '1',
      ApproximateNumberOfMessagesNotVisible: '1',
    });
  });

  it('returns the system attributes named in MessageSystemAttributeNames', async ({ expect }) => {
    const { url } = await createFifoQueue();
    await send(url, 'a1', 'A', 'a1');
    const [message] = await receive(url, {
      AttributeNames: undefined,
      MessageSystemAttributeNames: ['MessageGroupId', 'ApproximateReceiveCount'],
    });
    expect(message?.Attributes).toEqual({ MessageGroupId: 'A', ApproximateReceiveCount: '1' });
  });

  it('issues sequence numbers that increase with every send, within and across groups', async ({
    expect,
  }) => {
    const { url } = await createFifoQueue();
    const numbers: bigint[] = [];
    for (let i = 0; i < 12; i++) {
      const { SequenceNumber } = await send(url, `m${i}`, i % 4 ? 'A' : 'B', `m${i}`);
      expect(SequenceNumber).toMatch(/^\d{20}$/);
      numbers.push(BigInt(SequenceNumber ?? 0));
    }
    expect(numbers).toEqual([...numbers].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(new Set(numbers).size).toBe(12);
  });
});

describe('the emulator patch, applied when the emulator starts (no install script)', () => {
  let directory: string;
  /** The bundle this run's emulator runs. */
  const running = () => readFileSync(ensureSqsEmulatorPatched(), 'utf8');
  /** A bundle without its first line, the marker. */
  const body = (bundle: string) => bundle.slice(bundle.indexOf('\n') + 1);

  /**
   * A copy of local-aws-sqs as npm installs it (the run's patched bundle with every replacement undone),
   * or as Oncely 0.2 left it, with the replacements of patch v1 made in place.
   */
  function installedCopy(version = '2.0.2', patchedInPlaceByV1 = false): string {
    const copy = mkdtempSync(join(directory, 'local-aws-sqs-'));
    mkdirSync(join(copy, 'dist'));
    writeFileSync(join(copy, 'package.json'), JSON.stringify({ name: 'local-aws-sqs', version }));
    let source = body(running());
    for (const { find, replace } of [...SQS_EMULATOR_REPLACEMENTS].reverse()) {
      source = source.replace(replace, () => find);
    }
    if (patchedInPlaceByV1) {
      for (const { since, find, replace } of SQS_EMULATOR_REPLACEMENTS) {
        if (since === 1) source = source.replace(find, () => replace);
      }
      source = `/* oncely-patch v1 */ // patched by oncely's sandbox (sqs-emulator-patch.ts)\n${source}`;
    }
    writeFileSync(join(copy, 'dist', 'index.js'), source);
    return copy;
  }

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'oncely-sqs-patch-'));
  });
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it.each([
    ['as npm installs it', false],
    ['as Oncely 0.2 patched it in place', true],
  ])(
    'writes the bundle this run’s emulator runs beside a local-aws-sqs %s, leaving its own untouched',
    (_, v1) => {
      const copy = installedCopy('2.0.2', v1);
      const own = join(copy, 'dist', 'index.js');
      const before = readFileSync(own, 'utf8');
      const patchedPath = ensureSqsEmulatorPatched(copy);
      expect(patchedPath).toBe(join(copy, 'dist', 'index.oncely-v4.js'));
      const patched = readFileSync(patchedPath, 'utf8');
      expect(patched.startsWith('/* oncely-patch v4 */')).toBe(true);
      expect(patched).toBe(running());
      expect(readFileSync(own, 'utf8')).toBe(before);
      // No temporary file left beside it.
      expect(readdirSync(join(copy, 'dist')).sort()).toEqual(['index.js', 'index.oncely-v4.js']);

      expect(ensureSqsEmulatorPatched(copy)).toBe(patchedPath);
      expect(readFileSync(patchedPath, 'utf8')).toBe(patched);
    },
  );

  it('refuses another version of local-aws-sqs, whose bundle the replacements were not written for', () => {
    const copy = installedCopy('2.0.3');
    expect(() => ensureSqsEmulatorPatched(copy)).toThrow(SqsEmulatorPatchError);
    expect(() => ensureSqsEmulatorPatched(copy)).toThrow(
      /matches local-aws-sqs@2\.0\.2 exactly, but .* holds 2\.0\.3/,
    );
  });

  it('refuses a bundle in which a snippet to replace is not found exactly once', () => {
    expect(() => patchSqsEmulatorBundle('"use strict";')).toThrow(
      /the receive loop \(Fs\) was found 0 times in local-aws-sqs@2\.0\.2 dist\/index\.js/,
    );
  });
});

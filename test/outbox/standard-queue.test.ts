import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { drainGroup } from '../../lambdas/outbox/drain-group.js';
import { Outbox } from '../../lambdas/outbox/index.js';
import type { OutboxLayout } from '../../lambdas/outbox/layout.js';
import { relayBatch } from '../../lambdas/outbox/relay.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { createOutboxTable, markerInserts, outboxItemOf, senderOptions } from '../support/outbox.js';
import { failRequests } from '../support/sdk-middleware.js';
import {
  createStandardQueue,
  deleteQueues,
  drainQueue,
  type FifoQueue,
  localSqsClient,
} from '../support/sqs.js';
import { injectEntryFaults, PERMANENT, TRANSIENT } from '../support/sqs-faults.js';

/** The relay and the sweeper to a standard queue (DESIGN §5.1); relay-and-sweeper.test.ts has the FIFO cases. */
let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let layout: OutboxLayout;
let queue: FifoQueue;
const queues: FifoQueue[] = [];
const forever = () => 60_000;

beforeAll(async () => {
  dynamodb = localDynamoClient();
  sqs = localSqsClient(1);
});
beforeEach(async () => {
  layout = await createOutboxTable(dynamodb);
  queue = await createStandardQueue(sqs);
  queues.push(queue);
});
afterAll(async () => {
  await deleteQueues(sqs, queues);
  sqs.destroy();
  dynamodb.destroy();
});

/** Writes `count` messages of `groupId`, each in its own transaction, in order; their keys. */
async function writeMessages(groupId: string, count: number): Promise<string[]> {
  const outbox = new Outbox({ client: dynamodb, ...layout });
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const message = { type: 'OrderPlaced', groupId, key: `${groupId}-m${i}`, payload: { i } };
    keys.push(...(await outbox.write({ messages: [message] })).keys);
  }
  return keys;
}

const markerInsertsOf = (groupId: string) => markerInserts(dynamodb, layout, [groupId]);
const itemOf = (key: string) => outboxItemOf(dynamodb, layout, key);

const drainOptions = (client: SQSClient, documents = dynamodb) => ({
  ...senderOptions(documents, client, layout, queue.url),
  owner: 'relay:standard',
  sentBy: 'relay',
  timeLeftMs: forever,
});

describe('the outbox to a standard queue', () => {
  it('relays a group of ten in one call, without deduplication ids, the group as tenant key, each SENT', async () => {
    const keys = await writeMessages('std-a', 10);
    const calls = countRequests(sqs);

    const response = await relayBatch(await markerInsertsOf('std-a'), {
      ...senderOptions(dynamodb, sqs, layout, queue.url),
      timeLeftMs: forever,
    });

    expect(response.batchItemFailures).toEqual([]);
    expect(calls.counts.SendMessageBatch).toBe(1); // a FIFO queue takes ten, one message of a group each
    const received = await drainQueue(sqs, queue.url, 10); // and not one more
    expect(received.map((message) => message.envelope.key).sort()).toEqual([...keys].sort());
    expect(received.map((message) => [message.groupId, message.deduplicationId])).toEqual(
      received.map(() => ['std-a', undefined]),
    );
    for (const key of keys) expect(await itemOf(key)).toMatchObject({ status: 'SENT', attempts: 1 });
  });

  it('retries an entry refused before it was applied within the run, the rest of the group sent beside it', async () => {
    const keys = await writeMessages('std-refused', 10);
    const flaky = localSqsClient(1);
    const refused = keys[3] as string;
    const sends = injectEntryFaults(
      flaky,
      ({ key, attempt }) =>
        key === refused && attempt === 1 ? { when: 'before-sending', ...TRANSIENT } : undefined,
      { laterEntriesOfGroupFail: false },
    );

    const report = await drainGroup('std-refused', drainOptions(flaky));

    expect(report.sent).toEqual(keys);
    expect(sends.sentKeys).toEqual([...keys, refused]); // one call for the ten, one for the retry
    const received = await drainQueue(sqs, queue.url, 10); // and not one more
    expect(received.map((message) => message.envelope.key).sort()).toEqual([...keys].sort());
    flaky.destroy();
  });

  it('retries an entry applied whose answer was lost: two copies on the queue under one key, for the consumer', async () => {
    const keys = await writeMessages('std-lost', 3);
    const flaky = localSqsClient(1);
    const lost = keys[1] as string;
    injectEntryFaults(
      flaky,
      ({ key, attempt }) =>
        key === lost && attempt === 1 ? { when: 'after-sending', ...TRANSIENT } : undefined,
      { laterEntriesOfGroupFail: false },
    );

    const report = await drainGroup('std-lost', drainOptions(flaky));

    // On a FIFO queue SQS drops the retry (the same deduplication id); here the consumer's record does.
    expect(report.sent).toEqual(keys);
    const received = await drainQueue(sqs, queue.url, 4); // and not one more
    const copies = received.filter((message) => message.envelope.key === lost);
    expect(copies).toHaveLength(2);
    expect(copies[0]?.envelope).toEqual(copies[1]?.envelope);
    flaky.destroy();
  });

  it('marks what SQS accepted behind a refused head SENT: three drains put one copy of each on the queue (issue 40)', async () => {
    const keys = await writeMessages('std-head-refused', 5);
    const [head, ...behind] = keys as [string, ...string[]];
    const refusing = localSqsClient(1);
    injectEntryFaults(
      refusing,
      ({ key }) => (key === head ? { when: 'before-sending', ...PERMANENT } : undefined),
      {
        laterEntriesOfGroupFail: false,
      },
    );

    const reports = [];
    for (let drain = 0; drain < 3; drain++)
      reports.push(await drainGroup('std-head-refused', drainOptions(refusing)));

    expect(reports[0]).toMatchObject({ sent: behind, notSent: [head], sentUnmarked: [] });
    for (const key of behind) expect(await itemOf(key)).toMatchObject({ status: 'SENT' });
    expect(await itemOf(head)).toMatchObject({
      status: 'PENDING',
      lastError: expect.stringContaining('Invalid'),
    });
    const received = await drainQueue(sqs, queue.url, behind.length); // and not one more
    expect(received.map((message) => message.envelope.key).sort()).toEqual([...behind].sort());
    refusing.destroy();
  });

  it('a SENT mark that fails leaves the message pending and ours; the next drain sends it again: a second copy', async () => {
    const [key] = await writeMessages('std-unmarked', 1);
    const client = localDynamoClient();
    const failing = failRequests(client, (operation) => operation === 'TransactWriteItems');
    const options = drainOptions(sqs, client);

    const first = await drainGroup('std-unmarked', options);
    expect(first).toMatchObject({ sent: [], sentUnmarked: [key] });
    failing.stop();
    const second = await drainGroup('std-unmarked', options);

    expect(second.sent).toEqual([key]);
    expect(await itemOf(key as string)).toMatchObject({ status: 'SENT' });
    // On a FIFO queue SQS drops the second send within 5 minutes; here the consumer's record does.
    const received = await drainQueue(sqs, queue.url, 2); // and not one more
    expect(received.map((message) => message.envelope.key)).toEqual([key, key]);
    client.destroy();
  });
});

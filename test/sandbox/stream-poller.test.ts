import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { DeleteCommand, DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { InvocationResult } from '../../sandbox/lambda-context.js';
import { LOCAL_REGION, localAwsConfig, localFunctionArn } from '../../sandbox/local-aws-config.js';
import type { LocalQueue } from '../../sandbox/local-resources.js';
import { type StreamBatchReport, type StreamPoller, startStreamPoller } from '../../sandbox/stream-poller.js';
import { laneOf } from '../../sandbox/stream-shard-poller.js';
import type { LocalStreamSource } from '../../sandbox/stream-source.js';
import { uniqueName } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// The stream poller against DynamoDB Local's real streams, with an in-process function.

const dynamodb = new DynamoDBClient(localAwsConfig(emulatorEndpoint('dynamodbEndpoint')));
const documents = DynamoDBDocumentClient.from(dynamodb);
const streams = new DynamoDBStreamsClient(localAwsConfig(emulatorEndpoint('dynamodbEndpoint')));
const sqs = new SQSClient(localAwsConfig(emulatorEndpoint('sqsEndpoint')));
const pollers: StreamPoller[] = [];
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
});
afterAll(() => {
  dynamodb.destroy();
  streams.destroy();
  sqs.destroy();
});

/** A fresh table with a NEW_AND_OLD_IMAGES stream, and a mapping of it with Lambda's defaults but TRIM_HORIZON. */
async function streamSource(settings: Partial<LocalStreamSource> = {}): Promise<LocalStreamSource> {
  const name = uniqueName('stream');
  const { TableDescription } = await dynamodb.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }),
  );
  const streamArn = String(TableDescription?.LatestStreamArn);
  return {
    logicalId: 'Source',
    table: { logicalId: 'Table', name, arn: String(TableDescription?.TableArn), streamArn },
    streamArn,
    functionName: 'relay',
    functionArn: localFunctionArn('relay'),
    batchSize: 100,
    startingPosition: 'TRIM_HORIZON',
    maximumRetryAttempts: -1,
    maximumRecordAgeInSeconds: -1,
    bisectBatchOnFunctionError: false,
    reportBatchItemFailures: false,
    filterPatterns: [],
    maximumBatchingWindowInSeconds: 0,
    parallelizationFactor: 1,
    ...settings,
  };
}

/** A standard queue for discarded batches, and what arrived on it so far. */
async function failureQueue(): Promise<{ queue: LocalQueue; received: () => Promise<unknown[]> }> {
  const name = uniqueName('on-failure');
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  const queue = { logicalId: 'Failures', name, url: String(QueueUrl), arn: String(Attributes?.QueueArn) };
  const bodies: unknown[] = [];
  const received = async () => {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    bodies.push(...Messages.map((message) => JSON.parse(String(message.Body))));
    return bodies;
  };
  return { queue, received };
}

const put = (source: LocalStreamSource, item: Record<string, unknown>) =>
  documents.send(new PutCommand({ TableName: source.table.name, Item: item }));

type Handler = (
  event: DynamoDBStreamEvent,
  awsRequestId: string,
) => InvocationResult | Promise<InvocationResult>;

/** Polls the source's stream into `handler`; every invocation's records and every report are kept. */
async function poll(source: LocalStreamSource, handler: Handler = () => ok()) {
  const invocations: { records: DynamoDBRecord[]; requestId: string }[] = [];
  const reports: StreamBatchReport[] = [];
  const poller = await startStreamPoller({
    streams,
    sqs,
    source,
    region: LOCAL_REGION,
    invoke: async (event, requestId) => {
      invocations.push({ records: event.Records, requestId });
      return handler(event, requestId);
    },
    onBatch: (report) => reports.push(report),
  });
  pollers.push(poller);
  return { invocations, reports, poller };
}

const ok = (result?: unknown): InvocationResult => ({ ok: true, result });
const failWith = (...records: DynamoDBRecord[]): InvocationResult =>
  ok({ batchItemFailures: records.map((record) => ({ itemIdentifier: record.dynamodb?.SequenceNumber })) });
const boom: InvocationResult = { ok: false, error: { errorType: 'Error', errorMessage: 'boom' } };

/** The item id of each record, for assertions on what a function was given. */
const ids = (records: DynamoDBRecord[]) => records.map((record) => record.dynamodb?.Keys?.id?.S);
const delivered = (invocations: { records: DynamoDBRecord[] }[]) =>
  invocations.flatMap((invocation) => invocation.records);

describe('the stream poller', () => {
  it('delivers every record once, in order per item, in batches of at most batchSize, one at a time, as Lambda’s event', async () => {
    const source = await streamSource({ batchSize: 7 });
    const started = Date.now();
    // Five items, each written six times, interleaved: 5 INSERTs, then 25 MODIFYs.
    for (let version = 0; version < 6; version++) {
      for (let key = 0; key < 5; key++) {
        await put(source, { id: `k${key}`, version, ...(key === 0 && { blob: Uint8Array.of(1, 2, 3) }) });
      }
    }
    let running = 0;
    let peak = 0;
    const { invocations } = await poll(source, async () => {
      peak = Math.max(peak, ++running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      return ok();
    });
    await expect.poll(() => delivered(invocations).length, { timeout: 60_000 }).toBe(30);
    // The shard's tail is followed: a record written now comes next.
    await put(source, { id: 'k0', version: 6 });
    await expect.poll(() => delivered(invocations).length, { timeout: 60_000 }).toBe(31);

    const records = delivered(invocations);
    for (let key = 0; key < 5; key++) {
      const versions = records
        .filter((record) => record.dynamodb?.Keys?.id?.S === `k${key}`)
        .map((record) => Number(record.dynamodb?.NewImage?.version?.N));
      expect(versions).toEqual(key === 0 ? [0, 1, 2, 3, 4, 5, 6] : [0, 1, 2, 3, 4, 5]);
    }
    const sequenceNumbers = records.map((record) => BigInt(String(record.dynamodb?.SequenceNumber)));
    expect(sequenceNumbers.every((sequence, i) => i === 0 || sequence > sequenceNumbers[i - 1])).toBe(true);
    const sizes = invocations.map((invocation) => invocation.records.length);
    expect(sizes[0]).toBe(7);
    expect(Math.max(...sizes)).toBe(7);
    expect(peak).toBe(1);

    const [first] = records;
    expect(first).toEqual({
      eventID: expect.any(String),
      eventName: 'INSERT',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: LOCAL_REGION,
      eventSourceARN: source.streamArn,
      dynamodb: {
        ApproximateCreationDateTime: expect.any(Number),
        Keys: { id: { S: 'k0' } },
        // Binary values in base64, as in Lambda's JSON event.
        NewImage: { id: { S: 'k0' }, version: { N: '0' }, blob: { B: 'AQID' } },
        SequenceNumber: expect.stringMatching(/^\d+$/),
        SizeBytes: expect.any(Number),
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    });
    // Epoch seconds (DynamoDB Local rounds them down to the minute).
    const createdAt = Number(first.dynamodb?.ApproximateCreationDateTime);
    expect(createdAt).toBeGreaterThan(started / 1000 - 61);
    expect(createdAt).toBeLessThanOrEqual(Date.now() / 1000);
    expect(records[5]).toMatchObject({
      eventName: 'MODIFY',
      dynamodb: { OldImage: { id: { S: 'k0' }, version: { N: '0' } }, NewImage: { version: { N: '1' } } },
    });
  });

  it('starts at LATEST with what is written once it has started', async () => {
    const source = await streamSource({ startingPosition: 'LATEST' });
    await put(source, { id: 'before' });
    const { invocations } = await poll(source);
    await put(source, { id: 'after' });
    await expect.poll(() => ids(delivered(invocations)), { timeout: 60_000 }).toEqual(['after']);
  });

  it('waits up to the batching window to fill a batch', async () => {
    const source = await streamSource({ maximumBatchingWindowInSeconds: 1 });
    const { invocations } = await poll(source);
    for (const id of ['w1', 'w2', 'w3']) await put(source, { id });
    await expect.poll(() => invocations.length, { timeout: 60_000 }).toBe(1);
    expect(ids(invocations[0].records)).toEqual(['w1', 'w2', 'w3']);
  });

  it('drops the records no filter pattern matches: they never reach the function', async () => {
    const source = await streamSource({
      filterPatterns: [
        JSON.stringify({
          eventName: ['INSERT'],
          dynamodb: { NewImage: { kind: { S: [{ prefix: 'order' }] } } },
        }),
        JSON.stringify({
          dynamodb: { NewImage: { urgent: { BOOL: [true] }, kind: { S: [{ 'anything-but': ['audit'] }] } } },
        }),
        JSON.stringify({
          eventName: ['REMOVE'],
          dynamodb: { OldImage: { archived: { BOOL: [{ exists: false }] } } },
        }),
      ],
    });
    const { invocations, reports } = await poll(source);
    await put(source, { id: 'p1', kind: 'order-created' }); // INSERT with the prefix: 1st pattern
    await put(source, { id: 'p2', kind: 'audit' }); // no pattern
    await put(source, { id: 'p1', kind: 'order-paid' }); // a MODIFY: no pattern
    await put(source, { id: 'p3', kind: 'invoice', urgent: true }); // 2nd pattern
    await put(source, { id: 'p4', kind: 'audit', urgent: true }); // excluded by anything-but
    await put(source, { id: 'p5', kind: 'note', archived: true }); // no pattern
    await documents.send(new DeleteCommand({ TableName: source.table.name, Key: { id: 'p1' } })); // 3rd pattern
    await documents.send(new DeleteCommand({ TableName: source.table.name, Key: { id: 'p5' } })); // archived
    await put(source, { id: 'end', kind: 'order-end' }); // 1st pattern, after all the others
    await expect.poll(() => ids(delivered(invocations)).includes('end'), { timeout: 60_000 }).toBe(true);

    expect(delivered(invocations).map((record) => `${record.eventName} ${ids([record])[0]}`)).toEqual([
      'INSERT p1',
      'INSERT p3',
      'REMOVE p1',
      'INSERT end',
    ]);
    expect(reports.reduce((sum, report) => sum + report.records, 0)).toBe(4);
  });

  it('retries from the lowest reported failure: the records before it are not delivered again', async () => {
    const source = await streamSource({ reportBatchItemFailures: true });
    for (const id of ['r0', 'r1', 'r2', 'r3', 'r4']) await put(source, { id });
    const { invocations, reports } = await poll(source, (event, _id) =>
      invocations.length === 1 ? failWith(event.Records[3], event.Records[2]) : ok({ batchItemFailures: [] }),
    );
    await expect.poll(() => invocations.length, { timeout: 60_000 }).toBe(2);
    expect(invocations.map((invocation) => ids(invocation.records))).toEqual([
      ['r0', 'r1', 'r2', 'r3', 'r4'],
      ['r2', 'r3', 'r4'],
    ]);
    expect(reports).toEqual([
      { shardId: expect.any(String), records: 5, checkpointed: 2, retrying: 3, discarded: 0, attempt: 1 },
      { shardId: expect.any(String), records: 3, checkpointed: 3, retrying: 0, discarded: 0, attempt: 2 },
    ]);
  });

  it.each([
    ['an identifier of no record of the batch', [{ itemIdentifier: '999' }]],
    ['an empty identifier', [{ itemIdentifier: '' }]],
    ['no identifier', [{}]],
  ])('retries the whole batch after a partial response with %s', async (_what, batchItemFailures) => {
    const source = await streamSource({ reportBatchItemFailures: true });
    for (const id of ['a', 'b']) await put(source, { id });
    const { invocations } = await poll(source, () =>
      invocations.length === 1 ? ok({ batchItemFailures }) : ok(),
    );
    await expect.poll(() => invocations.length, { timeout: 60_000 }).toBe(2);
    expect(invocations.map((invocation) => ids(invocation.records))).toEqual([
      ['a', 'b'],
      ['a', 'b'],
    ]);
  });

  it('counts each retry after a partial response: past maximumRetryAttempts, the rest of the batch goes to the on-failure queue', async () => {
    const { queue, received } = await failureQueue();
    const source = await streamSource({
      reportBatchItemFailures: true,
      maximumRetryAttempts: 1,
      onFailure: queue,
    });
    for (const id of ['r0', 'r1', 'r2', 'r3']) await put(source, { id });
    const { invocations } = await poll(source, (event) => {
      const poison = event.Records.find((record) => ids([record])[0] === 'r1');
      return poison ? failWith(poison) : ok();
    });
    await expect.poll(received, { timeout: 60_000 }).toHaveLength(1);
    const [discarded] = (await received()) as Record<string, Record<string, unknown>>[];
    const [, r1, , r3] = delivered(invocations.slice(0, 1));
    expect(discarded.requestContext).toMatchObject({
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: 2,
    });
    expect(discarded.responseContext).toEqual({ statusCode: 200, executedVersion: '$LATEST' });
    expect(discarded.DDBStreamBatchInfo).toMatchObject({
      startSequenceNumber: r1.dynamodb?.SequenceNumber,
      endSequenceNumber: r3.dynamodb?.SequenceNumber,
      batchSize: 3,
    });
    // It moved on: the next record is delivered, and the discarded ones never again.
    await put(source, { id: 'r4' });
    await expect.poll(() => ids(delivered(invocations)).includes('r4'), { timeout: 60_000 }).toBe(true);
    expect(invocations.map((invocation) => ids(invocation.records))).toEqual([
      ['r0', 'r1', 'r2', 'r3'],
      ['r1', 'r2', 'r3'],
      ['r4'],
    ]);
  });

  it('retries a batch whose function failed maximumRetryAttempts times, then sends Lambda’s on-failure record and moves on', async () => {
    const { queue, received } = await failureQueue();
    const source = await streamSource({ maximumRetryAttempts: 2, onFailure: queue });
    for (const id of ['p0', 'p1', 'p2']) await put(source, { id, poison: true });
    const { invocations, reports } = await poll(source, (event) =>
      event.Records.some((record) => record.dynamodb?.NewImage?.poison) ? boom : ok(),
    );
    await expect.poll(received, { timeout: 60_000 }).toHaveLength(1);
    await put(source, { id: 'fine' });
    await expect.poll(() => ids(delivered(invocations)).includes('fine'), { timeout: 60_000 }).toBe(true);

    expect(invocations.map((invocation) => ids(invocation.records))).toEqual([
      ['p0', 'p1', 'p2'],
      ['p0', 'p1', 'p2'],
      ['p0', 'p1', 'p2'],
      ['fine'],
    ]);
    expect(reports.slice(0, 3)).toEqual(
      [1, 2, 3].map((attempt) => ({
        shardId: expect.stringMatching(/^shardId-/),
        records: 3,
        checkpointed: 0,
        retrying: attempt < 3 ? 3 : 0,
        discarded: attempt < 3 ? 0 : 3,
        attempt,
        functionError: 'Error: boom',
      })),
    );
    const [p0, , p2] = invocations[2].records;
    const [discarded] = await received();
    expect(discarded).toEqual({
      requestContext: {
        requestId: invocations[2].requestId,
        functionArn: source.functionArn,
        condition: 'RetryAttemptsExhausted',
        approximateInvokeCount: 3,
      },
      responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
      version: '1.0',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      DDBStreamBatchInfo: {
        shardId: reports[0].shardId,
        startSequenceNumber: p0.dynamodb?.SequenceNumber,
        endSequenceNumber: p2.dynamodb?.SequenceNumber,
        approximateArrivalOfFirstRecord: new Date(Number(p0.dynamodb?.ApproximateCreationDateTime) * 1000)
          .toISOString()
          .replace('.000Z', 'Z'),
        approximateArrivalOfLastRecord: new Date(Number(p2.dynamodb?.ApproximateCreationDateTime) * 1000)
          .toISOString()
          .replace('.000Z', 'Z'),
        batchSize: 3,
        streamArn: source.streamArn,
      },
    });
  });

  it('bisects a failing batch when asked, so that only the failing record is discarded', async () => {
    const { queue, received } = await failureQueue();
    const source = await streamSource({
      bisectBatchOnFunctionError: true,
      maximumRetryAttempts: 1,
      onFailure: queue,
    });
    for (const id of ['a', 'b', 'c', 'poison']) await put(source, { id });
    const { invocations } = await poll(source, (event) =>
      ids(event.Records).includes('poison') ? boom : ok(),
    );
    await expect.poll(received, { timeout: 60_000 }).toHaveLength(1);
    expect(invocations.map((invocation) => ids(invocation.records))).toEqual([
      ['a', 'b', 'c', 'poison'],
      ['a', 'b'],
      ['c', 'poison'],
      ['c'],
      ['poison'],
      ['poison'],
    ]);
    const [discarded] = (await received()) as { DDBStreamBatchInfo: Record<string, unknown> }[];
    const poison = invocations[5].records[0].dynamodb?.SequenceNumber;
    expect(discarded.DDBStreamBatchInfo).toMatchObject({
      startSequenceNumber: poison,
      endSequenceNumber: poison,
      batchSize: 1,
    });
  });

  it('discards records older than maximumRecordAgeInSeconds, to the on-failure queue, and moves on', async () => {
    const { queue, received } = await failureQueue();
    const source = await streamSource({ maximumRecordAgeInSeconds: 1, onFailure: queue });
    const { invocations } = await poll(source, () => boom);
    await put(source, { id: 'stale' });
    await expect.poll(received, { timeout: 60_000 }).toHaveLength(1);
    const invokedBefore = invocations.length;
    // Retried while younger than a second, at least twice (after 100 ms, then 200 ms more).
    expect(invokedBefore).toBeGreaterThanOrEqual(2);
    await put(source, { id: 'next' });
    await expect.poll(received, { timeout: 60_000 }).toHaveLength(2);

    const [stale, next] = (await received()) as Record<string, Record<string, unknown>>[];
    const sequenceOf = (id: string) =>
      delivered(invocations).find((record) => ids([record])[0] === id)?.dynamodb?.SequenceNumber;
    for (const [discarded, id] of [
      [stale, 'stale'],
      [next, 'next'],
    ] as const) {
      const tries = invocations.filter((invocation) => ids(invocation.records).includes(id));
      expect(discarded.requestContext).toMatchObject({
        condition: 'RecordAgeExceeded',
        requestId: tries[tries.length - 1].requestId,
        approximateInvokeCount: tries.length,
      });
      expect(discarded.responseContext).toMatchObject({ functionError: 'Unhandled' });
      expect(discarded.DDBStreamBatchInfo).toMatchObject({
        startSequenceNumber: sequenceOf(id),
        endSequenceNumber: sequenceOf(id),
        batchSize: 1,
        streamArn: source.streamArn,
      });
    }
    expect(ids(delivered(invocations.slice(invokedBefore)))).not.toContain('stale');
  });

  it('with a ParallelizationFactor, runs batches of one shard at once, each item’s records in order', async () => {
    const source = await streamSource({ batchSize: 2, parallelizationFactor: 4 });
    const keys = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'];
    for (let version = 0; version < 3; version++) {
      for (const id of keys) await put(source, { id, version });
    }
    let running = 0;
    let peak = 0;
    const concurrent: string[][] = [];
    const { invocations } = await poll(source, async (event) => {
      peak = Math.max(peak, ++running);
      concurrent.push(ids(event.Records).map(String));
      // Each batch stays out until another one runs beside it (or a bound passes).
      const deadline = Date.now() + 10_000;
      while (peak < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      running--;
      return ok();
    });
    await expect.poll(() => delivered(invocations).length, { timeout: 60_000 }).toBe(24);

    expect(peak).toBeGreaterThan(1);
    const records = delivered(invocations);
    for (const id of keys) {
      const versions = records
        .filter((record) => record.dynamodb?.Keys?.id?.S === id)
        .map((record) => Number(record.dynamodb?.NewImage?.version?.N));
      expect(versions).toEqual([0, 1, 2]);
    }
    // The shard's total order is not kept across items: records of different items were reordered.
    const sequenceNumbers = records.map((record) => BigInt(String(record.dynamodb?.SequenceNumber)));
    expect(sequenceNumbers.some((sequence, i) => i > 0 && sequence < sequenceNumbers[i - 1])).toBe(true);
  });

  it('with a ParallelizationFactor, a failing item holds up only its own lane', async () => {
    const source = await streamSource({ batchSize: 1, parallelizationFactor: 10 });
    await put(source, { id: 'poison' });
    const others = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    for (const id of others) await put(source, { id });
    // Retried forever (maximumRetryAttempts -1), as Lambda does until the record expires.
    const { invocations } = await poll(source, (event) =>
      ids(event.Records).includes('poison') ? boom : ok(),
    );
    const laneOfItem = (id: string) => laneOf({ dynamodb: { Keys: { id: { S: id } } } }, 10);
    const blocked = others.filter((id) => laneOfItem(id) === laneOfItem('poison'));
    const attempts = (id: string) => ids(delivered(invocations)).filter((seen) => seen === id).length;
    // Every item outside poison's lane gets through while poison is retried, again and again.
    await expect
      .poll(() => others.filter((id) => attempts(id) > 0), { timeout: 60_000 })
      .toEqual(others.filter((id) => !blocked.includes(id)));
    await expect.poll(() => attempts('poison'), { timeout: 60_000 }).toBeGreaterThan(2);
    // Those in poison's lane wait behind it.
    for (const id of blocked) expect(attempts(id)).toBe(0);
    expect(blocked.length).toBeGreaterThan(0);
    expect(blocked.length).toBeLessThan(others.length);
  });

  it('stops promptly, even retrying forever, after the invocation in progress, and invokes nothing after', async () => {
    const source = await streamSource();
    await put(source, { id: 'forever' });
    let inProgress = false;
    const { invocations, poller } = await poll(source, async () => {
      inProgress = true;
      await new Promise((resolve) => setTimeout(resolve, 200));
      inProgress = false;
      return boom;
    });
    await expect.poll(() => invocations.length, { timeout: 60_000 }).toBeGreaterThanOrEqual(2);
    await expect.poll(() => inProgress, { timeout: 60_000 }).toBe(true);
    await poller.stop();
    // It waited for the invocation in progress, and starts no other (nor a retry) after it.
    expect(inProgress).toBe(false);
    const invoked = invocations.length;
    await put(source, { id: 'after-stop' });
    // Longer than a retry's delay and an idle read's interval together (a bound, not a race fix).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(invocations).toHaveLength(invoked);
  });

  it('stops an idle poller without waiting out its intervals', async () => {
    const { poller } = await poll(await streamSource());
    const stopping = Date.now();
    await poller.stop();
    // Its discovery interval is 2 s: a stop that waited it out takes that long (measured: 2.9 s);
    // one that ends the wait takes a few event-loop turns (0.3 s with the file's set-up on a busy
    // machine). The bound sits between, far from both.
    expect(Date.now() - stopping).toBeLessThan(1_500);
  });
});

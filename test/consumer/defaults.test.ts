import { randomUUID } from 'node:crypto';
import { Metrics } from '@aws-lambda-powertools/metrics';
import {
  type ChangeMessageVisibilityBatchCommandInput,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { defaultSqsClient } from '../../lambdas/consumer/dead-letter-queue.js';
import { readConsumerEnvironment } from '../../lambdas/consumer/environment.js';
import {
  CONSUMER_ENVIRONMENT,
  CONSUMER_METRICS,
  DLQ_ATTRIBUTES,
  fifoBatch,
  leaseOperation,
  OncelyConfigurationError,
  standardBatch,
} from '../../lambdas/consumer/index.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { toSqsRecord } from '../../sandbox/sqs-event.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { readItem } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { lambdaContext } from '../support/lambda-context.js';
import { LEASE_STORES, leaseRecords } from '../support/lease-stores.js';
import { createStandardQueueWithDlq, named, publish, receiveMessages } from '../support/sqs.js';
import { pollOnce, pollUntil } from '../support/sqs-event-source.js';

// fifoBatch with nothing but its operations, as in a function the OncelyPipeline construct deploys:
// its store, DLQ, logger and metrics come from the environment, read on the first batch. The tests
// change process.env, so they run one at a time.

const world = consumerTestWorld('defaults-idem');
let sqs: SQSClient;
let idempotencyTable: string;
beforeAll(() => {
  ({ sqs } = world);
  [idempotencyTable] = world.tables as [string];
});

/** What the construct and the sandbox give a consumer: the emulators' endpoints, a region, credentials. */
beforeEach(() => {
  vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', emulatorEndpoint('dynamodbEndpoint'));
  vi.stubEnv('AWS_ENDPOINT_URL_SQS', emulatorEndpoint('sqsEndpoint'));
  vi.stubEnv('AWS_REGION', LOCAL_REGION);
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
  vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'defaults-consumer');
  vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'oncely-test');
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'ERROR');
});

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

const consumerQueues = () => world.queuePair();

function stubConsumerEnvironment(values: Partial<Record<keyof typeof CONSUMER_ENVIRONMENT, string>>) {
  for (const [variable, name] of Object.entries(CONSUMER_ENVIRONMENT)) {
    vi.stubEnv(name, values[variable as keyof typeof CONSUMER_ENVIRONMENT]);
  }
}

/** Takes the JSON lines the function writes to `stream` (stdout and stderr both go to its CloudWatch logs). */
function captureLines(stream: NodeJS.WriteStream) {
  const lines: Record<string, unknown>[] = [];
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  vi.spyOn(stream, 'write').mockImplementation(((chunk: unknown, ...rest: unknown[]) => {
    const text = String(chunk);
    if (!text.startsWith('{')) return write(chunk, ...rest);
    lines.push(
      ...text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    );
    return true;
  }) as typeof stream.write);
  return lines;
}

function recordingOperation() {
  const ran: string[] = [];
  const operation = leaseOperation({
    namespace: `defaults-${randomUUID().slice(0, 8)}`,
    mode: 'at-least-once',
    run: (message) => {
      ran.push((message.payload as { name: string }).name);
    },
  });
  return { ran, operation };
}

describe('fifoBatch with only its operations', () => {
  it('takes its store, DLQ and metrics from the environment, and publishes the metrics it made', async () => {
    const { queue, dlq } = await consumerQueues();
    stubConsumerEnvironment({
      idempotencyTableName: idempotencyTable,
      idempotencyTtlSeconds: '600',
      dlqUrl: dlq.url,
      queueUrl: queue.url,
      maxConcurrentGroups: '2',
    });
    const { ran, operation } = recordingOperation();
    const handler = middy<SQSEvent, SQSBatchResponse>().use(fifoBatch({ operations: { Named: operation } }));
    const a1 = named('A', 'A1');
    const ids = {
      a1: await publish(sqs, queue.url, a1),
      b1: await publish(sqs, queue.url, named('B', 'B1')),
      poison: await publish(sqs, queue.url, named('C', 'C1', 'NoSuchType')),
    };
    const stdout = captureLines(process.stdout);

    const startedSeconds = Math.floor(Date.now() / 1000);
    const poll = await pollOnce(sqs, queue, handler);
    const endedSeconds = Math.floor(Date.now() / 1000);
    expect(poll.error).toBeUndefined();
    expect(poll.response?.batchItemFailures).toEqual([]);
    expect(ran.sort()).toEqual(['A1', 'B1']);
    // The store: IDEMPOTENCY_TABLE_NAME, its records living IDEMPOTENCY_TTL_SECONDS.
    const record = await readItem(idempotencyTable, `${operation.namespace}#${a1.key}`);
    expect(record).toMatchObject({ status: 'COMPLETED' });
    expect(record?.expiresAt).toBeGreaterThanOrEqual(startedSeconds + 600);
    expect(record?.expiresAt).toBeLessThanOrEqual(endedSeconds + 600);
    // The DLQ: DLQ_URL.
    const [dead] = await receiveMessages(sqs, dlq.url, 1);
    expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTES.originalMessageId]?.StringValue).toBe(ids.poison);
    // The metrics it made, published once at the end of the batch as one EMF line (a value per count).
    const emf = stdout.filter((line) => '_aws' in line);
    expect(emf).toHaveLength(1);
    expect(emf[0]).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Namespace: 'oncely-test', Dimensions: [['service']] }] },
      service: 'defaults-consumer',
      [CONSUMER_METRICS.processed]: [1, 1],
      [CONSUMER_METRICS.sentToDlq]: 1,
    });
  });

  it('fails the batch with an error naming every missing or invalid variable, then works once they are set', async () => {
    const { queue, dlq } = await consumerQueues();
    stubConsumerEnvironment({ idempotencyTableName: idempotencyTable, idempotencyTtlSeconds: 'soon' });
    const { ran, operation } = recordingOperation();
    // Built without its environment, as a module imported where the variables are missing.
    const handler = middy<SQSEvent, SQSBatchResponse>().use(fifoBatch({ operations: { Named: operation } }));
    const id = await publish(sqs, queue.url, named('A', 'A1'));
    const stderr = captureLines(process.stderr);

    const failed = await pollOnce(sqs, queue, handler);
    expect(failed.error).toBeInstanceOf(OncelyConfigurationError);
    const error = failed.error as OncelyConfigurationError;
    expect(error.name).toBe('OncelyConfigurationError');
    expect(error.sources).toEqual(['IDEMPOTENCY_TTL_SECONDS', 'DLQ_URL']);
    expect(error.message).toContain(
      'IDEMPOTENCY_TTL_SECONDS must be a whole number of at least 1, not "soon"',
    );
    expect(error.message).toContain('DLQ_URL is not set');
    expect(error.message).toContain('OncelyPipeline construct');
    expect(failed.deleted).toEqual([]);
    expect(ran).toEqual([]);
    expect(stderr).toContainEqual(
      expect.objectContaining({
        level: 'ERROR',
        message: 'the whole batch failed: SQS redelivers every record of it',
        messageIds: [id],
      }),
    );

    // The next batch reads the environment again.
    stubConsumerEnvironment({ idempotencyTableName: idempotencyTable, dlqUrl: dlq.url });
    const redelivered = await pollUntil(sqs, queue, handler, (polls) =>
      polls.some((poll) => poll.deleted.includes(id)),
    );
    expect(redelivered.map((poll) => poll.error)).toEqual(redelivered.map(() => undefined));
    expect(ran).toEqual(['A1']);
  });
});

// A store passed in, DynamoDB's or Valkey's, stands for the store's variables. The tests above and
// below are about the default store, DynamoDB's, made from IDEMPOTENCY_TABLE_NAME: they stay on it
// (test/consumer/valkey-defaults.test.ts covers the Valkey store the construct's environment makes).
describe.each(LEASE_STORES)('fifoBatch with its store passed in (records in %s)', (storeName) => {
  const records = leaseRecords(storeName);

  it('reads only the variables its options leave to the environment, and leaves metrics passed in to their owner', async () => {
    const { queue, dlq } = await consumerQueues();
    stubConsumerEnvironment({ dlqUrl: dlq.url, maxConcurrentGroups: '0' });
    const { ran, operation } = recordingOperation();
    const store = records.store();
    const metrics = new Metrics();
    // Neither IDEMPOTENCY_TABLE_NAME nor a valid MAX_CONCURRENT_GROUPS: the options stand for them.
    const handler = middy<SQSEvent, SQSBatchResponse>().use(
      fifoBatch({ operations: { Named: operation }, store, maxConcurrentGroups: 3, metrics }),
    );
    await publish(sqs, queue.url, named('A', 'A1'));
    const stdout = captureLines(process.stdout);

    const poll = await pollOnce(sqs, queue, handler);
    expect(poll.error).toBeUndefined();
    expect(ran).toEqual(['A1']);
    expect(stdout.filter((line) => '_aws' in line)).toEqual([]);
    metrics.publishStoredMetrics(); // what the owner's logMetrics middleware does
    expect(stdout.filter((line) => '_aws' in line)).toMatchObject([{ [CONSUMER_METRICS.processed]: 1 }]);
  });
});

describe('standardBatch with only its operations', () => {
  it('takes its store, standard DLQ, queue and concurrency from the environment; its metrics say queueType', async () => {
    const { queue, dlq } = await createStandardQueueWithDlq(sqs, {
      visibilityTimeoutSeconds: 30,
      maxReceiveCount: 50,
    });
    world.own(queue, dlq);
    stubConsumerEnvironment({
      idempotencyTableName: idempotencyTable,
      dlqUrl: dlq.url,
      queueUrl: queue.url,
      maxConcurrentRecords: '2',
    });
    // The default client is the container's one: what it sends to the queue is recorded here.
    const changes: ChangeMessageVisibilityBatchCommandInput[] = [];
    (await defaultSqsClient()).middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'ChangeMessageVisibilityBatchCommand') {
          changes.push(args.input as ChangeMessageVisibilityBatchCommandInput);
        }
        return next(args);
      },
      { step: 'initialize', name: `standardDefaults${Math.random()}` },
    );
    let inFlight = 0;
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const operation = leaseOperation<{ name: string }>({
      namespace: `defaults-standard-${randomUUID().slice(0, 8)}`,
      mode: 'at-least-once',
      run: async ({ payload: { name } }) => {
        inFlight++;
        await gate;
        inFlight--;
        if (name === 'bad') throw new Error('the downstream service is unavailable');
      },
    });
    const handler = middy<SQSEvent, SQSBatchResponse>().use(
      standardBatch({ operations: { Named: operation } }),
    );
    const body = (name: string, type = 'Named') =>
      JSON.stringify(
        createEnvelope({ type, groupId: 'tenant', key: `${name}-${randomUUID()}`, payload: { name } }),
      );
    for (const [name, type] of [
      ['a', 'Named'],
      ['b', 'Named'],
      ['c', 'Named'],
      ['bad', 'Named'],
      ['poison', 'NoSuchType'],
    ]) {
      await sqs.send(
        new SendMessageCommand({ QueueUrl: queue.url, MessageBody: body(name as string, type) }),
      );
    }
    const messages = await receiveMessages(sqs, queue.url, 5);
    const event = { Records: messages.map((message) => toSqsRecord(message, queue.arn, LOCAL_REGION)) };
    const stdout = captureLines(process.stdout);

    const running = handler(event, lambdaContext());
    // MAX_CONCURRENT_RECORDS: two of the four runnable records run, the others wait for a slot.
    const deadline = Date.now() + 30_000;
    while (inFlight < 2 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    // A round trip to DynamoDB: a third record's lease, were it being taken, would be answered by then.
    await readItem(idempotencyTable, 'no-such-record');
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(inFlight).toBe(2);
    open();
    const response = await running;

    const bad = event.Records.find((record) => JSON.parse(record.body).payload.name === 'bad');
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: bad?.messageId }]);
    // QUEUE_URL: the failed record's backoff, 5 s ceiling on its first delivery, jittered.
    expect(changes).toMatchObject([
      { QueueUrl: queue.url, Entries: [{ ReceiptHandle: bad?.receiptHandle }] },
    ]);
    const seconds = changes[0]?.Entries?.[0]?.VisibilityTimeout ?? 0;
    expect(seconds >= 3 && seconds <= 5).toBe(true);
    // DLQ_URL: a standard DLQ.
    const [dead] = await receiveMessages(sqs, dlq.url, 1);
    expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue).toBe('UnknownMessageTypeError');
    const emf = stdout.filter((line) => '_aws' in line);
    expect(emf).toHaveLength(1);
    expect(emf[0]).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Namespace: 'oncely-test', Dimensions: [['service']] }] },
      service: 'defaults-consumer',
      queueType: 'standard',
      [CONSUMER_METRICS.processed]: [1, 1, 1],
      [CONSUMER_METRICS.failed]: 1,
      [CONSUMER_METRICS.sentToDlq]: 1,
    });
  });
});

describe('readConsumerEnvironment', () => {
  it('reads and checks every variable the construct sets', () => {
    const environment = {
      IDEMPOTENCY_TABLE_NAME: 'oncely-idempotency',
      IDEMPOTENCY_TTL_SECONDS: '2592000',
      DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/events-dlq.fifo',
      QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/events.fifo',
      MAX_CONCURRENT_GROUPS: '4',
    };
    expect(readConsumerEnvironment(undefined, environment)).toEqual({
      idempotencyTableName: 'oncely-idempotency',
      idempotencyTtlSeconds: 2_592_000,
      dlqUrl: environment.DLQ_URL,
      queueUrl: environment.QUEUE_URL,
      maxConcurrentGroups: 4,
    });
  });

  it('names every problem at once', () => {
    const read = () =>
      readConsumerEnvironment(undefined, {
        IDEMPOTENCY_TABLE_NAME: '',
        DLQ_URL: 'events-dlq.fifo',
        QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/events.fifo',
        MAX_CONCURRENT_GROUPS: '2.5',
      });
    expect(read).toThrow(OncelyConfigurationError);
    expect(read).toThrow(
      'IDEMPOTENCY_TABLE_NAME is empty; DLQ_URL must be an http(s) URL, not "events-dlq.fifo"; ' +
        'MAX_CONCURRENT_GROUPS must be a whole number of at least 1, not "2.5"',
    );
  });
});

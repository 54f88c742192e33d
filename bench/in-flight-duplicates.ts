import { setTimeout as sleep } from 'node:timers/promises';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { type Spread, spreadOf } from '../harness/statistics.js';
import { createEnvelope } from '../lambdas/common/envelope.js';
import { resolveSettings } from '../lib/constructs/pipeline-settings.js';
import { startEventSourcePoller } from '../sandbox/event-source-poller.js';
import type { InvocationResult } from '../sandbox/lambda-context.js';
import { LOCAL_REGION } from '../sandbox/local-aws-config.js';
import { type BatchHandler, type StockTables, stockTables } from './batch-latency.js';
import { type BenchEndpoints, dynamoDbClient, sqsClient } from './clients.js';
import { createPowertoolsConsumerHandler } from './consumers/powertools-consumer.js';
import { type ShopEvent, shopEventEffect } from './consumers/shop-events.js';
import { createStandardConsumerHandler } from './consumers/standard-consumer.js';
import { invocationContext, silentTelemetry } from './invocation.js';
import { createStandardQueue, deleteQueues, sumOfAttribute } from './resources.js';
import { stockMessages } from './stock-events.js';

/** The consumers whose in-flight duplicates are timed. */
export const IN_FLIGHT_SUBJECTS = {
  oncelyDefault:
    'Oncely lease mode (at-least-once), defaults: the copy comes back after inProgressRetrySeconds',
  oncelyWait: 'Oncely lease mode (at-least-once), inFlightWaitMs: the copy waits for its original',
  powertools:
    'Powertools makeIdempotent: IdempotencyAlreadyInProgressError, the copy comes back after the visibility timeout',
} as const;
export type InFlightSubject = keyof typeof IN_FLIGHT_SUBJECTS;

export interface InFlightOptions {
  /** Originals, each with one copy delivered while it runs; all at once. */
  pairs: number;
  /** How long each original's effect is held before it writes. */
  holdMs: number;
  /** The `inFlightWaitMs` of the waiting Oncely consumer. */
  inFlightWaitMs: number;
  /** The queue's; the construct's default for a standard pipeline when unset. */
  visibilityTimeoutSeconds?: number;
}

export interface InFlightRow {
  subject: InFlightSubject;
  /** Milliseconds from the copy's first delivery to the end of the invocation that acknowledged it. */
  settle: Spread;
  /** Invocations that received the copy, the acknowledging one included, at most. */
  maxDeliveries: number;
  visibilityTimeoutSeconds: number;
}

/**
 * The time a duplicate that arrives while its original is in flight takes to settle. Per subject,
 * a standard queue with the construct's visibility timeout and redrive, polled by the sandbox's
 * event source poller (Lambda's rules, up to the construct's `maxConcurrency` batches at once) into
 * the consumer in this process. `pairs` originals are sent; each original's effect, once it has
 * its claim, sends its copy (the same envelope: a second delivery as SQS's at-least-once makes it)
 * and is held `holdMs` before its write. Timed from the copy's first delivery to the end of the
 * invocation that acknowledges it (the poller deletes it next). The subjects run at once, each on
 * its own queue and tables; every copy must have arrived before its original finished, and the
 * ledger must show every original applied once.
 */
export async function measureInFlightDuplicates(
  endpoints: BenchEndpoints,
  options: InFlightOptions,
): Promise<InFlightRow[]> {
  const subjects = Object.keys(IN_FLIGHT_SUBJECTS) as InFlightSubject[];
  return Promise.all(subjects.map((subject) => timeSubject(endpoints, subject, options)));
}

async function timeSubject(
  endpoints: BenchEndpoints,
  subject: InFlightSubject,
  options: InFlightOptions,
): Promise<InFlightRow> {
  const construct = resolveSettings({ queueType: 'standard' });
  const visibilityTimeoutSeconds =
    options.visibilityTimeoutSeconds ?? construct.visibilityTimeout.toSeconds();
  const sqs = sqsClient(endpoints);
  const dynamodb = dynamoDbClient(endpoints);
  const dlq = await createStandardQueue(sqs, {});
  const queue = await createStandardQueue(sqs, {
    VisibilityTimeout: String(visibilityTimeoutSeconds),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: dlq.arn,
      maxReceiveCount: construct.maxReceiveCount,
    }),
  });
  const copies = new CopyTimes();
  const messages = stockMessages(options.pairs, options.pairs);
  const bodies = new Map(messages.map((message) => [message.key, JSON.stringify(createEnvelope(message))]));
  const tables = await stockTables(dynamodb);
  const write = shopEventEffect(DynamoDBDocumentClient.from(dynamodb), tables);
  // The original's effect: its claim is written by now, so its copy finds it in flight.
  const unsentCopies = new Map(bodies);
  const effect = async (event: ShopEvent) => {
    const body = unsentCopies.get(event.key);
    if (body !== undefined) {
      unsentCopies.delete(event.key);
      const { MessageId } = await sqs.send(
        new SendMessageCommand({ QueueUrl: queue.url, MessageBody: body }),
      );
      copies.add(String(MessageId), event.key);
      await sleep(options.holdMs);
      await write(event);
      copies.originalDone(event.key);
      return;
    }
    await write(event);
  };
  const handler = subjectHandler(subject, {
    ...tables,
    dynamodb,
    sqs,
    dlqUrl: dlq.url,
    queueUrl: queue.url,
    effect,
    options,
  });
  const poller = startEventSourcePoller({
    sqs,
    region: LOCAL_REGION,
    source: {
      logicalId: `InFlight-${subject}`,
      queue,
      functionName: `bench-in-flight-${subject}`,
      batchSize: construct.batchSize,
      maximumBatchingWindowInSeconds: 0,
      reportBatchItemFailures: true,
      maxConcurrency: construct.maxConcurrency,
      maxConcurrencySet: true,
      filterPatterns: [],
      enabled: true,
    },
    invoke: (event) => copies.invoke(event, handler),
  });
  try {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queue.url,
        Entries: [...bodies.values()].map((body, index) => ({ Id: String(index), MessageBody: body })),
      }),
    );
    const deadline = Date.now() + (visibilityTimeoutSeconds + 30) * 1000 + options.holdMs;
    await copies.waitForAll(options.pairs, deadline, subject);
    const applied = await sumOfAttribute(dynamodb, tables.ledgerTableName, 'available');
    if (applied !== options.pairs) {
      throw new Error(
        `${subject}: the ledger holds ${applied} units after ${options.pairs} messages of one unit`,
      );
    }
    return { subject, ...copies.summary(subject), visibilityTimeoutSeconds };
  } finally {
    await poller.stop();
    await deleteQueues(sqs, [queue, dlq]);
    sqs.destroy();
    dynamodb.destroy();
  }
}

function subjectHandler(
  subject: InFlightSubject,
  setup: StockTables & {
    dynamodb: DynamoDBClient;
    sqs: SQSClient;
    dlqUrl: string;
    queueUrl: string;
    effect: (event: ShopEvent) => Promise<void>;
    options: InFlightOptions;
  },
): BatchHandler {
  const { options, ...common } = setup;
  if (subject === 'powertools') {
    return createPowertoolsConsumerHandler({ ...common, queueType: 'standard', ...silentTelemetry() });
  }
  return createStandardConsumerHandler({
    ...common,
    mode: 'at-least-once',
    inFlightWaitMs: subject === 'oncelyWait' ? options.inFlightWaitMs : undefined,
    ...silentTelemetry(),
  });
}

/** The copies' deliveries, as the poller invokes the consumer with them. */
class CopyTimes {
  readonly #copies = new Map<
    string,
    { key: string; firstDelivery?: number; settled?: number; deliveries: number }
  >();
  /** When each original's effect finished, by key. */
  readonly #originalsDone = new Map<string, number>();
  #failure: string | undefined;

  add(messageId: string, key: string): void {
    this.#copies.set(messageId, { key, deliveries: 0 });
  }

  originalDone(key: string): void {
    this.#originalsDone.set(key, performance.now());
  }

  /** Invokes the consumer as Lambda would, noting when each copy arrived and when it was acknowledged. */
  async invoke(event: SQSEvent, handler: BatchHandler): Promise<InvocationResult> {
    const started = performance.now();
    const copies = event.Records.flatMap(({ messageId }) => {
      const copy = this.#copies.get(messageId);
      return copy ? [[messageId, copy] as const] : [];
    });
    for (const [, copy] of copies) {
      copy.firstDelivery ??= started;
      copy.deliveries++;
    }
    let response: SQSBatchResponse;
    try {
      response = await handler(event, invocationContext());
    } catch (error) {
      // Powertools throws when every record of a batch failed: the poller leaves them all.
      const { name, message } = error as Error;
      if (!name.includes('FullBatchFailure')) this.#failure ??= `${name}: ${message}`;
      return { ok: false, error: { errorType: name, errorMessage: message } };
    }
    const failed = new Set(response.batchItemFailures.map(({ itemIdentifier }) => itemIdentifier));
    const ended = performance.now();
    for (const [messageId, copy] of copies) if (!failed.has(messageId)) copy.settled ??= ended;
    return { ok: true, result: response };
  }

  async waitForAll(count: number, deadline: number, what: string): Promise<void> {
    const settled = () => [...this.#copies.values()].filter((copy) => copy.settled !== undefined).length;
    while (this.#copies.size < count || settled() < count) {
      if (this.#failure) throw new Error(`${what}: the consumer failed: ${this.#failure}`);
      if (Date.now() > deadline)
        throw new Error(`${what}: ${count - settled()} copies unsettled by the deadline`);
      await sleep(20);
    }
  }

  /** The figures, once every copy is known to have arrived while its original was in flight. */
  summary(what: string): Pick<InFlightRow, 'settle' | 'maxDeliveries'> {
    const copies = [...this.#copies.values()];
    const late = copies.filter(
      (copy) => !((copy.firstDelivery ?? Number.NaN) < (this.#originalsDone.get(copy.key) ?? Number.NaN)),
    );
    if (late.length > 0) {
      throw new Error(
        `${what}: ${late.length} copies arrived after their original finished, not while in flight`,
      );
    }
    return {
      settle: spreadOf(
        copies.map((copy) => (copy.settled ?? Number.NaN) - (copy.firstDelivery ?? Number.NaN)),
      ),
      maxDeliveries: Math.max(...copies.map((copy) => copy.deliveries)),
    };
  }
}

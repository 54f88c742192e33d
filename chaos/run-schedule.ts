import { randomUUID } from 'node:crypto';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { MetricResolution, MetricUnit } from '@aws-lambda-powertools/metrics/types';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { ChaosWorld } from '../harness/chaos-world.js';
import { combinePlans } from '../harness/combine-plans.js';
import { type FaultPlan, noFaults } from '../harness/faults.js';
import { seededFaultPlan } from '../harness/seeded-plan.js';
import { publish } from '../lambdas/client/publish.js';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';
import { groupingFor } from '../lambdas/common/queue-type.js';
import { DEFAULT_MAX_ATTEMPTS } from '../lambdas/consumer/environment.js';
import { DynamoDBIdempotencyStore } from '../lambdas/idempotency/index.js';
import type { MessageStatus } from '../lambdas/publisher/contract.js';
import { createPublisherHandler } from '../lambdas/publisher/handler.js';
import { lambdaContext } from '../sandbox/lambda-context.js';
import { LOCAL_REGION } from '../sandbox/local-aws-config.js';
import { failedMessageIds, toSqsRecord } from '../sandbox/sqs-event.js';
import { CHAOS_ABORT_TYPE, PlannedAbort } from './batch-abort.js';
import { CHAOS_NAMESPACES, CHAOS_TYPES, type ChaosPayload } from './chaos-operations.js';
import { ConsumerContainer, type ContainerOptions } from './consumer-container.js';
import { EffectLedger } from './effect-ledger.js';
import { observeOutcome, type ScheduleOutcome } from './observe.js';
import { PublishRoundWatch } from './publish-rounds.js';
import type { CrashMark, CrashPoint, HoldPoint, Schedule, Step } from './schedule.js';
import { dynamoDbClientVia, sqsClientVia } from './sdk-clients.js';
import { createTestClock, skewedNow, type TestClock } from './test-clock.js';

/** Records live a day here: long enough to outlast the schedule, short enough to jump past. */
export const CHAOS_TTL_SECONDS = 24 * 60 * 60;
/** The consumer's timeout; its lease is this plus the 2 s margin. */
const CONSUMER_TIMEOUT_MS = 30_000;
/** More than every lease: a jump "past the lease". */
const PAST_LEASE_MS = CONSUMER_TIMEOUT_MS + 5_000;
/** Deliveries before SQS moves a FIFO message to the DLQ; high, so that faults rarely exhaust it. */
const MAX_RECEIVE_COUNT = 10;
/** A standard queue's: the construct's default, `maxAttempts` + 15 (DESIGN §5.1). */
const STANDARD_MAX_RECEIVE_COUNT = DEFAULT_MAX_ATTEMPTS + 15;
/** Deliveries of the drain at most, after the steps: each expires leases and visibility first. */
const MAX_DRAIN_ROUNDS = 40;

interface Queue {
  url: string;
  arn: string;
}

/** What the run of one schedule saw and left behind, for the invariants. */
export interface ScheduleRun {
  id: string;
  schedule: Schedule;
  keys: string[];
  /** Keys a consumer received at least once: accepted messages, whatever the publish answered. */
  received: Set<string>;
  /** Keys the publish reported `sent`. */
  sent: Set<string>;
  /**
   * Keys an invocation crashed on: the planned point for its first record, `in-flight` for the
   * batch's others, which may have been anywhere (between acquire and effect, inside the effect…).
   */
  crashed: Map<string, Set<CrashMark>>;
  /** Keys that went through a redrive, or arrived again after SQS's window. */
  resent: Set<string>;
  /** Each `republish` step's key, in step order, and what its publish answered (nothing: it threw). */
  republished: { key: string; status: MessageStatus | undefined }[];
  unrecordedCompletions: Set<string>;
  /** Keys for which a write that lets the effect start was sent (see `ContainerOptions.startsSent`). */
  startsSent: Set<string>;
  /** See `ContainerOptions.startedNotGivenBack`. */
  startedNotGivenBack: Set<string>;
  /** See `ContainerOptions.recordsNotKept`. */
  recordsNotKept: Set<string>;
  /**
   * Each copy a `deliver-copy` step put right behind its original, in an invocation that answered:
   * whether the original and the copy were acknowledged.
   */
  copiesBehind: { key: string; original: boolean; copy: boolean }[];
  /** The schedule's publish: what its responses and its result said of each key. */
  publication: PublishRoundWatch;
  /**
   * Copies of a message delivered while another copy was being processed: to two invocations at
   * once (`deliver-twice`), right behind it in one batch (`deliver-copy`), to a second container
   * while the first held its key (`deliver-while-held`).
   */
  duplicatesDelivered: Record<'two-invocations' | 'in-one-batch' | 'while-held', number>;
  /** The copies of `deliver-while-held` steps: acknowledged after waiting for the held key, or given back. */
  heldCopies: { waited: number; cameBack: number };
  /** Metric name → how often the consumers counted it. */
  metrics: Map<string, number>;
  /** Message ids whose send to the DLQ was applied and its answer lost: the SDK may send it again. */
  deadLetterAnswersLost: Set<string>;
  /** Faults on the consumer's `ChangeMessageVisibilityBatch` and DLQ sends, by request and kind (`DLQ send lose-answer`). */
  consumerSqsFaults: Record<string, number>;
  /** Message ids whose DLQ mark failed on every try (`ContainerOptions.deadLetterMarksNotWritten`). */
  deadLetterMarksNotWritten: Set<string>;
  ledger: EffectLedger;
  outcome: ScheduleOutcome;
}

/**
 * Runs one schedule against the real publisher, consumer middleware and idempotency core, on
 * DynamoDB Local and the SQS emulator behind fault proxies: publish, the steps, then a drain without
 * faults that delivers until the queue is empty — and observes what is left.
 */
export async function runSchedule(
  world: ChaosWorld,
  schedule: Schedule,
  options: { extraFaults?: FaultPlan; operations?: ContainerOptions['operations'] } = {},
): Promise<ScheduleRun> {
  const id = `s${randomUUID().slice(0, 8)}`;
  const clock = createTestClock();
  const standard = schedule.queueType === 'standard';
  const [queue, dlq] = await createQueues(world.sqs, id, standard);
  const ledger = new EffectLedger();
  const run: Omit<ScheduleRun, 'outcome'> = {
    id,
    schedule,
    keys: schedule.messages.map((_, index) => `${id}-m${index}`),
    received: new Set(),
    sent: new Set(),
    crashed: new Map(),
    resent: new Set(),
    republished: [],
    unrecordedCompletions: new Set(),
    startsSent: new Set(),
    startedNotGivenBack: new Set(),
    recordsNotKept: new Set(),
    copiesBehind: [],
    publication: new PublishRoundWatch(),
    duplicatesDelivered: { 'two-invocations': 0, 'in-one-batch': 0, 'while-held': 0 },
    heldCopies: { waited: 0, cameBack: 0 },
    metrics: new Map(),
    deadLetterAnswersLost: new Set(),
    deadLetterMarksNotWritten: new Set(),
    consumerSqsFaults: {},
    ledger,
  };
  const inFlight = new Map<string, string>(); // messageId → receipt handle, until deleted
  const containers: ConsumerContainer[] = [];
  const newContainer = () => {
    const container = new ConsumerContainer({
      dynamodbProxy: world.dynamodbProxy,
      sqsProxy: world.sqsProxy,
      idempotencyTable: world.idempotencyTable,
      effectsTable: world.effectsTable,
      ttlSeconds: CHAOS_TTL_SECONDS,
      dlqUrl: dlq.url,
      queueUrl: queue.url,
      // Each container (a Lambda execution environment) has its own clock.
      now: skewedNow(clock, schedule.clockSkewsMs, containers.length).now,
      ledger,
      unrecordedCompletions: run.unrecordedCompletions,
      startsSent: run.startsSent,
      startedNotGivenBack: run.startedNotGivenBack,
      recordsNotKept: run.recordsNotKept,
      deadLetterMarksNotWritten: run.deadLetterMarksNotWritten,
      metrics: run.metrics,
      operations: options.operations,
      ...(standard ? { standard: { inFlightWaitMs: schedule.inFlightWaitMs ?? 0 } } : {}),
    });
    containers.push(container);
    return container;
  };
  const seeded = scheduleFaultPlan(schedule, id);
  const rounds = run.publication.plan(schedule.publishRounds, `${id}-g${schedule.publishRounds?.group}`);
  const plan = watchConsumerSqsFaults(
    combinePlans(...(options.extraFaults ? [options.extraFaults] : []), rounds, seeded),
    dlq.url,
    run,
  );
  world.dynamodbProxy.setPlan(plan);
  world.sqsProxy.setPlan(plan);
  const publisherClients = {
    sqs: sqsClientVia(world.sqsProxy),
    dynamodb: dynamoDbClientVia(world.dynamodbProxy),
  };
  const publisherName = registerPublisher(world, id, queue.url, publisherClients, run);
  try {
    const messages = schedule.messages.map((message, index) => chaosMessage(id, index, message));
    const publishedAtMs = Date.now();
    run.publication.active = true;
    await publishTheSchedule(world, publisherName, messages, run, `${id}-publish`);
    run.publication.active = false;
    let warm = newContainer();
    for (const step of schedule.steps) {
      if (warm.dead) warm = newContainer();
      await runStep(step, {
        world,
        queue,
        dlq,
        clock,
        inFlight,
        run,
        container: warm,
        newContainer,
        messages,
        publisherName,
        publishedAtMs,
      });
    }
    world.dynamodbProxy.setPlan(noFaults);
    world.sqsProxy.setPlan(noFaults);
    await drain({ world, queue, clock, inFlight, run, newContainer });
    const outcome = await observeOutcome(world, dlq.url, run.keys);
    return { ...run, outcome };
  } finally {
    world.dynamodbProxy.setPlan(noFaults);
    world.sqsProxy.setPlan(noFaults);
    world.unregister(publisherName);
    for (const container of containers) container.destroy();
    publisherClients.sqs.destroy();
    publisherClients.dynamodb.destroy();
    await Promise.all(
      [queue, dlq].map(({ url }) => world.sqs.send(new DeleteQueueCommand({ QueueUrl: url }))),
    );
  }
}

interface StepContext {
  world: ChaosWorld;
  queue: Queue;
  dlq: Queue;
  clock: TestClock;
  inFlight: Map<string, string>;
  run: Omit<ScheduleRun, 'outcome'>;
  container: ConsumerContainer;
  newContainer: () => ConsumerContainer;
  messages: ReturnType<typeof chaosMessage>[];
  publisherName: string;
  /** When the messages were published (the schedule's start). */
  publishedAtMs: number;
}

async function runStep(step: Step, context: StepContext): Promise<void> {
  const { world, queue, dlq, clock, inFlight, run } = context;
  switch (step.kind) {
    case 'deliver':
      await deliver(context, [context.container], step.crash);
      return;
    case 'deliver-twice':
      await deliver(context, [context.container, context.newContainer()]);
      return;
    case 'deliver-abort':
      await deliver(context, [context.container], undefined, 'abort');
      return;
    case 'deliver-copy':
      await deliver(context, [context.container], undefined, 'copy');
      return;
    case 'expire-visibility':
      await expireVisibility(world.sqs, queue.url, inFlight);
      return;
    case 'republish': {
      const key = context.messages[step.index]?.key ?? '';
      // Nothing deduplicates a re-publish on a standard queue: it is a copy, as a resend is.
      if (run.schedule.queueType === 'standard') run.resent.add(key);
      const final = await publishQuietly(
        world,
        context.publisherName,
        [context.messages[step.index] as never],
        run.sent,
      );
      run.republished.push({ key, status: final?.get(key) });
      return;
    }
    case 'resend-after-window':
      await sendCopy(context, context.messages[step.index]);
      return;
    case 'deliver-while-held':
      await deliverWhileHeld(context, step.hold);
      return;
    case 'late-republication':
      await republishLate(context, step.index);
      return;
    case 'redrive':
      await redrive(world.sqs, dlq.url, queue.url, run.resent);
      return;
    case 'clock-jump':
      clock.advance(step.past === 'lease' ? PAST_LEASE_MS : (CHAOS_TTL_SECONDS + 3_600) * 1000);
      return;
  }
}

/**
 * Message `message` arrives again (after SQS's window on a FIFO queue; any time on a standard one):
 * the same envelope as published — a copy of the message, not a new publish of it.
 */
async function sendCopy(context: StepContext, message: StepContext['messages'][number] | undefined) {
  const { world, queue, run } = context;
  if (!message) return;
  run.resent.add(message.key);
  const body = JSON.stringify({ ...message, publishedAt: new Date(context.publishedAtMs).toISOString() });
  await world.sqs.send(
    new SendMessageCommand({
      QueueUrl: queue.url,
      MessageBody: body,
      ...groupingFor(queue.url, message.groupId, randomUUID()),
    }),
  );
}

/**
 * A standard queue's redelivery while the original is in flight: the warm container's invocation
 * stops at `point` on the first record that gets there; SQS delivers a copy of that message to a
 * new container; the first goes on once the copy's claim of the key has been answered (or the
 * copy's invocation ended without one), so that a copy that waits for the key sees it settle.
 */
async function deliverWhileHeld(context: StepContext, point: HoldPoint): Promise<void> {
  const { run } = context;
  const holder = context.container;
  const original = deliver(context, [holder]);
  const key = await Promise.race([holder.planHold(point), original.then(() => undefined)]);
  if (key === undefined) {
    holder.release(); // nothing got there: an empty queue, or every record failed before it
    return;
  }
  await sendCopy(
    context,
    context.messages.find((message) => message.key === key),
  );
  const copyHolder = context.newContainer();
  let foundHeld = false;
  const stopWatching = copyHolder.onAnswered(({ kind, ids, failed }) => {
    if (!ids.some((id) => id.endsWith(`#${key}`)) || (kind !== 'acquire' && kind !== 'transaction')) return;
    foundHeld ||= failed;
    holder.release();
  });
  const copy = await deliver(context, [copyHolder]).finally(() => {
    stopWatching();
    holder.release();
  });
  await original;
  const delivered = copy.answered.find((record) => keyOfBody(record) === key);
  if (!delivered) return;
  run.duplicatesDelivered['while-held']++;
  if (copy.givenBack.includes(delivered)) run.heldCopies.cameBack++;
  else if (foundHeld) run.heldCopies.waited++;
}

/** Half the records' TTL: a re-publication this late has a horizon past its key's first record. */
const HALF_TTL_MS = (CHAOS_TTL_SECONDS / 2) * 1000;
/** Deliveries in which a consumer sees a late copy, at most (a crash or a whole-batch failure answers nothing). */
const LATE_COPY_DELIVERIES = 3;

/**
 * DESIGN §2's late re-publication: half a TTL on (every visibility timeout has run out by then),
 * the producer publishes message `index` again (a fresh `publishedAt`) behind a new record of its
 * group that fails once. Consumers see the copy while its key's record lives, as they do within
 * the queue's retention; a delivery that gives it back is its last allowed receive, and SQS
 * dead-letters it. Another half TTL and an hour on, the key's first record has expired while the
 * copy is inside its horizon, and the DLQ is redriven: the copy must be a duplicate, not run again.
 */
async function republishLate(context: StepContext, index: number): Promise<void> {
  const { world, queue, dlq, clock, inFlight, run } = context;
  const message = context.messages[index];
  const operation = run.schedule.messages[index]?.operation;
  if (!message || !operation) return;
  clock.advance(HALF_TTL_MS);
  // A key published again once its record expired is a new message, which runs (DESIGN §2): only
  // a re-publication inside its key's dedup window is one to recognise.
  const id = `${CHAOS_NAMESPACES[operation]}#${message.key}`;
  const { Item } = await DynamoDBDocumentClient.from(world.dynamodb).send(
    new GetCommand({ TableName: world.idempotencyTable, Key: { id }, ConsistentRead: true }),
  );
  if (Item && Number(Item.expiresAt) <= Math.floor(clock.now() / 1000)) return;
  const blockerKey = `${message.key}-blocker${run.resent.size}`;
  const blocker = {
    ...message,
    key: blockerKey,
    payload: { ...message.payload, key: blockerKey, behaviour: 'fail-once' as const },
  };
  // Both came later than the schedule's messages: left out of the order check, as a redrive is.
  run.resent.add(message.key).add(blockerKey);
  let copyId = '';
  for (const envelope of [blocker, message]) {
    const { MessageId = '' } = await world.sqs.send(
      new SendMessageCommand({
        QueueUrl: queue.url,
        MessageBody: JSON.stringify({ ...envelope, publishedAt: new Date(clock.now()).toISOString() }),
        ...groupingFor(queue.url, envelope.groupId, randomUUID()),
      }),
    );
    copyId = MessageId;
  }
  for (let round = 0; round < LATE_COPY_DELIVERIES; round++) {
    await expireVisibility(world.sqs, queue.url, inFlight);
    const { answered, givenBack } = await deliver(context, [context.container]);
    await deadLetterGivenBack(context, givenBack);
    if (answered.some((record) => record.messageId === copyId)) break;
  }
  clock.advance(HALF_TTL_MS + 3_600_000);
  await expireVisibility(world.sqs, queue.url, inFlight);
  await redrive(world.sqs, dlq.url, queue.url, run.resent);
}

/**
 * What SQS does after a message's last allowed receive: moves it to the DLQ, body and group kept.
 * Only records an invocation answered and gave back: each such delivery had its chance to keep
 * its key's record (DESIGN §2); a delivery that died had none.
 */
async function deadLetterGivenBack(
  context: Pick<StepContext, 'world' | 'queue' | 'dlq' | 'inFlight'>,
  givenBack: readonly SQSRecord[],
): Promise<void> {
  const { world, queue, dlq, inFlight } = context;
  for (const record of givenBack) {
    if (!inFlight.has(record.messageId)) continue;
    await world.sqs.send(
      new SendMessageCommand({
        QueueUrl: dlq.url,
        MessageBody: record.body,
        ...groupingFor(dlq.url, record.attributes.MessageGroupId ?? '', randomUUID()),
      }),
    );
    await world.sqs.send(
      new DeleteMessageCommand({ QueueUrl: queue.url, ReceiptHandle: record.receiptHandle }),
    );
    inFlight.delete(record.messageId);
  }
}

/** What one delivery came to: the records an invocation answered for, and those it gave back. */
interface Delivery {
  /** Every record of the batch when an invocation answered and none died; else none. */
  answered: SQSRecord[];
  /** The answered records that were reported failed and not acknowledged by another invocation. */
  givenBack: SQSRecord[];
}

/**
 * One receive and one invocation per container with the same batch, as Lambda's event source
 * does; records reported successful are deleted, unless the invocation died. `abort` adds a record
 * that fails the batch while its first at-most-once effect runs (see `PlannedAbort`); `copy` puts a
 * copy of the batch's first record right behind it, as SQS delivers a message re-sent after its
 * window — records no queue holds, so nothing deletes them.
 */
async function deliver(
  context: Pick<StepContext, 'world' | 'queue' | 'clock' | 'inFlight' | 'run'>,
  containers: ConsumerContainer[],
  crash?: CrashPoint,
  extra?: 'abort' | 'copy',
): Promise<Delivery> {
  const { world, queue, clock, inFlight, run } = context;
  const { Messages = [] } = await world.sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queue.url,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
      AttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  if (Messages.length === 0) return { answered: [], givenBack: [] };
  const records = Messages.map((message) => toSqsRecord(message, queue.arn, LOCAL_REGION));
  if (containers.length > 1) run.duplicatesDelivered['two-invocations'] += records.length;
  for (const record of records) {
    inFlight.set(record.messageId, record.receiptHandle);
    const key = keyOfBody(record);
    if (key) run.received.add(key);
  }
  const [first] = records as [SQSRecord, ...SQSRecord[]];
  const copy = extra === 'copy' ? synthetic(first, first.body) : undefined;
  const copied = copy && keyOfBody(first);
  if (copy && copied) {
    run.resent.add(copied); // a second copy of it may be dead-lettered too
    run.duplicatesDelivered['in-one-batch']++;
    records.splice(1, 0, copy);
  }
  const atMostOnce = records.some((record) => record.body.includes(`"${CHAOS_TYPES['at-most-once']}"`));
  const abort = extra === 'abort' ? new PlannedAbort(atMostOnce) : undefined;
  if (abort) records.push(abortRecord(first, run.id, clock.now()));
  const target = crash ? keyOfBody(first) : undefined;
  // The record after the target in its group: the one whose lease the target's group takes ahead.
  const groupOf = (record: SQSRecord) => record.attributes.MessageGroupId;
  const afterTarget = records.slice(1).find((record) => groupOf(record) === groupOf(first));
  const next = afterTarget && keyOfBody(afterTarget);
  const markCrash = (key: string | undefined, mark: CrashMark) => {
    if (!key) return;
    const marks = run.crashed.get(key) ?? new Set<CrashMark>();
    marks.add(mark);
    run.crashed.set(key, marks);
  };
  const now = clock.now();
  const responses = await Promise.all(
    containers.map(async (container) => {
      container.planCrash(
        crash && crash !== 'before-ack' && target ? { key: target, next, point: crash } : undefined,
      );
      container.planAbort(abort);
      const context = lambdaContext({
        functionName: 'chaos-consumer',
        functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:chaos-consumer',
        awsRequestId: randomUUID(),
        // The lease is sized from the remaining time, which follows the schedule's clock.
        deadline: Date.now() + CONSUMER_TIMEOUT_MS,
      });
      context.getRemainingTimeInMillis = () => Math.max(0, now + CONSUMER_TIMEOUT_MS - clock.now());
      const answer = await Promise.race([
        container.handler({ Records: records }, context).then(
          (response): SQSBatchResponse | 'failed' => response,
          (): 'failed' => 'failed',
        ),
        container.died.then((): 'died' => 'died'),
      ]);
      container.planCrash(undefined);
      container.planAbort(undefined);
      return answer;
    }),
  );
  if (responses.includes('died') || crash === 'before-ack') {
    markCrash(target, crash ?? 'in-flight');
    for (const record of records.slice(1)) markCrash(keyOfBody(record), 'in-flight');
  }
  // It answered, then died before Lambda deleted anything.
  if (crash === 'before-ack') return { answered: [], givenBack: [] };
  const acknowledged = new Set<string>();
  const givenBack = new Set<SQSRecord>();
  for (const response of responses) {
    if (response === 'died' || response === 'failed') continue;
    const failed = failedMessageIds(response, { Records: records });
    if (failed === 'all') continue;
    for (const record of records) {
      if (failed.has(record.messageId)) givenBack.add(record);
      else acknowledged.add(record.messageId);
    }
  }
  if (copy && copied && responses.length === 1 && typeof responses[0] === 'object') {
    run.copiesBehind.push({
      key: copied,
      original: acknowledged.has(first.messageId),
      copy: acknowledged.has(copy.messageId),
    });
  }
  for (const record of records) {
    if (!acknowledged.has(record.messageId) || !inFlight.has(record.messageId)) continue;
    await world.sqs
      .send(new DeleteMessageCommand({ QueueUrl: queue.url, ReceiptHandle: record.receiptHandle }))
      .catch(() => undefined); // as Lambda's event source: a failed delete only brings the message back
    inFlight.delete(record.messageId);
  }
  if (responses.some((response) => response === 'died' || response === 'failed')) {
    return { answered: [], givenBack: [] };
  }
  return {
    answered: records,
    givenBack: [...givenBack].filter((record) => !acknowledged.has(record.messageId)),
  };
}

/** A record no queue holds, in `like`'s group: a new message id, `body`. */
function synthetic(like: SQSRecord, body: string): SQSRecord {
  const messageId = randomUUID();
  return { ...like, messageId, receiptHandle: `synthetic-${messageId}`, body };
}

/** The record of a `deliver-abort` step: its own type, in a group of its own. */
function abortRecord(like: SQSRecord, runId: string, nowMs: number): SQSRecord {
  const key = `${runId}-abort-${randomUUID().slice(0, 8)}`;
  const groupId = `${runId}-abort`;
  const body = JSON.stringify({
    type: CHAOS_ABORT_TYPE,
    key,
    groupId,
    payload: {},
    publishedAt: new Date(nowMs).toISOString(), // the schedule's clock: never past the horizon
  });
  const record = synthetic(like, body);
  return { ...record, attributes: { ...record.attributes, MessageGroupId: groupId } };
}

/** Messages left in flight become visible again, as when their visibility timeout runs out. */
async function expireVisibility(
  sqs: SQSClient,
  queueUrl: string,
  inFlight: Map<string, string>,
): Promise<void> {
  for (const [messageId, receiptHandle] of inFlight) {
    await sqs
      .send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: queueUrl,
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: 0,
        }),
      )
      .catch(() => undefined); // deleted meanwhile (a record dead-lettered by the consumer)
    inFlight.delete(messageId);
  }
}

/** Moves every DLQ message back to the queue, in order, as `oncely dlq redrive` does. */
async function redrive(sqs: SQSClient, dlqUrl: string, queueUrl: string, resent: Set<string>): Promise<void> {
  for (let round = 0; round < 20; round++) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: dlqUrl, MaxNumberOfMessages: 10, AttributeNames: ['All'] }),
    );
    if (Messages.length === 0) return;
    for (const message of Messages) {
      const key = safeKey(message.Body);
      if (key) resent.add(key);
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: message.Body,
          ...groupingFor(queueUrl, message.Attributes?.MessageGroupId ?? '', randomUUID()),
        }),
      );
      await sqs.send(new DeleteMessageCommand({ QueueUrl: dlqUrl, ReceiptHandle: message.ReceiptHandle }));
    }
  }
}

/**
 * After the steps, without faults: leases expire, visibility runs out, and fresh containers deliver
 * until the queue is empty — every message then ends where its record and the DLQ say.
 */
async function drain(
  context: Pick<StepContext, 'world' | 'queue' | 'clock' | 'inFlight' | 'run' | 'newContainer'>,
) {
  const { world, queue, clock, inFlight } = context;
  for (let round = 0; round < MAX_DRAIN_ROUNDS; round++) {
    clock.advance(PAST_LEASE_MS);
    await expireVisibility(world.sqs, queue.url, inFlight);
    if ((await messagesInQueue(world.sqs, queue.url)) === 0) return;
    await deliver(context, [context.newContainer()]);
  }
  throw new Error(`the queue of ${context.run.id} did not drain in ${MAX_DRAIN_ROUNDS} deliveries`);
}

async function createQueues(sqs: SQSClient, id: string, standard: boolean): Promise<[Queue, Queue]> {
  const create = async (name: string, attributes: Record<string, string>): Promise<Queue> => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand(
        standard
          ? { QueueName: name, Attributes: attributes }
          : { QueueName: `${name}.fifo`, Attributes: { FifoQueue: 'true', ...attributes } },
      ),
    );
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    return { url: String(QueueUrl), arn: String(Attributes?.QueueArn) };
  };
  const dlq = await create(`${id}-dlq`, {});
  const queue = await create(id, {
    VisibilityTimeout: '60',
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: dlq.arn,
      maxReceiveCount: standard ? STANDARD_MAX_RECEIVE_COUNT : MAX_RECEIVE_COUNT,
    }),
  });
  return [queue, dlq];
}

function chaosMessage(id: string, index: number, message: Schedule['messages'][number]) {
  const key = `${id}-m${index}`;
  const groupId = `${id}-g${message.group}`;
  const payload: ChaosPayload = { key, group: groupId, behaviour: message.behaviour };
  return { type: CHAOS_TYPES[message.operation], groupId, key, payload };
}

/**
 * `plan`, counting the faults it gives the consumer's own SQS requests (`consumerSqsFaults`), and
 * noting the original message id of each send to the DLQ whose answer it loses: on a standard
 * DLQ, which does not deduplicate, the SDK's retry of it is a second copy.
 */
function watchConsumerSqsFaults(
  plan: FaultPlan,
  dlqUrl: string,
  run: Pick<ScheduleRun, 'deadLetterAnswersLost' | 'consumerSqsFaults'>,
): FaultPlan {
  return (request) => {
    const fault = plan(request);
    const { QueueUrl, MessageAttributes } = request.body as {
      QueueUrl?: string;
      MessageAttributes?: { OriginalMessageId?: { StringValue?: string } };
    };
    const deadLetter = request.operation === 'SendMessage' && QueueUrl === dlqUrl;
    const original = MessageAttributes?.OriginalMessageId?.StringValue;
    if (fault?.kind === 'lose-answer' && deadLetter && original) run.deadLetterAnswersLost.add(original);
    if (fault && (deadLetter || request.operation === 'ChangeMessageVisibilityBatch')) {
      const what = `${deadLetter ? 'DLQ send' : request.operation} ${fault.kind}`;
      run.consumerSqsFaults[what] = (run.consumerSqsFaults[what] ?? 0) + 1;
    }
    return fault;
  };
}

/**
 * The schedule's seeded faults. The plan sees requests with this run's id taken out, so that its
 * decisions — which depend on what a request targets — are the same whenever the schedule runs.
 */
export function scheduleFaultPlan(schedule: Schedule, id: string): FaultPlan {
  const seeded = seededFaultPlan({ seed: schedule.faults.seed, rates: schedule.faults.rates });
  return (request) =>
    seeded({ ...request, body: JSON.parse(JSON.stringify(request.body).replaceAll(id, 'S')) });
}

/**
 * The publisher's metrics (its refusals: a repeat that meets its request in progress), counted
 * with the consumers' in the run rather than printed as EMF lines on the command's output.
 */
class CountingMetrics extends Metrics {
  constructor(readonly counts: Map<string, number>) {
    super({ namespace: 'OncelyChaos', serviceName: 'chaos-publisher' });
  }

  override addMetric(name: string, unit: MetricUnit, value: number, resolution?: MetricResolution): this {
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    return super.addMetric(name, unit, value, resolution);
  }

  override publishStoredMetrics(): this {
    this.clearMetrics();
    this.clearMetadata();
    return this;
  }
}

function registerPublisher(
  world: ChaosWorld,
  id: string,
  queueUrl: string,
  clients: { sqs: SQSClient; dynamodb: DynamoDBClient },
  run: Pick<ScheduleRun, 'publication' | 'metrics'>,
): string {
  const handler = createPublisherHandler({
    sqs: clients.sqs,
    queueUrl,
    maxMessageBytes: 262_144,
    store: new DynamoDBIdempotencyStore({ client: clients.dynamodb, tableName: world.idempotencyTable }),
    retry: { maxAttempts: 4, baseDelayMs: 5, maxDelayMs: 40 },
    metrics: new CountingMetrics(run.metrics),
  });
  return world.register(`chaos-publisher-${id}`, run.publication.wrap(handler));
}

/**
 * The schedule's publish: one call, or with `publishRounds.repeat` a second under the same
 * requestId, after the first or alongside it. Each call's result goes to `run.publication.finals`.
 */
async function publishTheSchedule(
  world: ChaosWorld,
  functionName: string,
  messages: ReturnType<typeof chaosMessage>[],
  run: Omit<ScheduleRun, 'outcome'>,
  requestId: string,
): Promise<void> {
  const { publication } = run;
  const call = async () => {
    const final = await publishQuietly(world, functionName, messages, run.sent, requestId);
    if (final) publication.finals.push(final);
  };
  const repeat = run.schedule.publishRounds?.repeat;
  if (repeat === 'concurrent') {
    await Promise.all([call(), call()]);
    return;
  }
  await call();
  if (repeat !== 'after') return;
  publication.callIndex = 1;
  await call();
}

/**
 * Publishes through the real client; a publish that fails for good leaves its messages unaccepted.
 * Returns each key's status in the result, or nothing when the publish threw.
 */
async function publishQuietly(
  world: ChaosWorld,
  functionName: string,
  messages: ReturnType<typeof chaosMessage>[],
  sent: Set<string>,
  requestId?: string,
): Promise<Map<string, MessageStatus> | undefined> {
  try {
    const { results } = await publish(messages, {
      functionName,
      lambda: world.lambda,
      retry: { maxAttempts: 4, baseDelayMs: 5, maxDelayMs: 40 },
      ...(requestId === undefined ? {} : { requestId }),
    });
    for (const result of results) if (result.status === 'sent') sent.add(result.key);
    return new Map(results.map((result) => [result.key, result.status]));
  } catch {
    // Retries ran out under faults: what reached the queue anyway shows up as received.
    return undefined;
  }
}

function keyOfBody(record: SQSRecord): string | undefined {
  return safeKey(record.body);
}

function safeKey(body: string | undefined): string | undefined {
  try {
    return (JSON.parse(body ?? '') as { key?: string }).key;
  } catch {
    return undefined;
  }
}

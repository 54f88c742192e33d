import { randomUUID } from 'node:crypto';
import { DeleteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, DeleteQueueCommand } from '@aws-sdk/client-sqs';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { noFaults } from '../harness/faults.js';
import type { OutboxWorld } from '../harness/outbox-world.js';
import { groupPartition } from '../lambdas/outbox/layout.js';
import { relayBatch } from '../lambdas/outbox/relay.js';
import { sweep } from '../lambdas/outbox/sweeper.js';
import { ClaimLog } from './outbox-claims.js';
import { type InvocationOptions, OutboxInvocation, PAST_CLAIM_MS } from './outbox-invocation.js';
import { markersLeft, type OutboxOutcome, observeOutbox } from './outbox-observe.js';
import { insertedMarkers, OutboxProducer, type PlannedWrite, takenKey } from './outbox-producer.js';
import { OUTBOX_GROUPS, type OutboxHalt, type OutboxSchedule, type OutboxStep } from './outbox-schedule.js';
import { SendLog } from './outbox-sends.js';
import { MarkerStream } from './outbox-stream.js';
import { OutboxTraffic } from './outbox-traffic.js';
import { dynamoDbClientVia } from './sdk-clients.js';
import { createTestClock, skewedNow, type TestClock } from './test-clock.js';

/** A fixed start, so that order keys — and the faults drawn from them — are the same on every run. */
const CLOCK_START_MS = Date.UTC(2030, 0, 1);
/** Time between two steps: short of a claim's lease. */
const STEP_MS = 1_000;
/** Stream shards: a group's markers are all in one (its partition's). */
const SHARDS = 2;
/** Sweeps of the drain at most, each after the clock passed every claim. */
const MAX_DRAIN_ROUNDS = 5;
/** Bound on an invocation that neither answers nor halts. */
const INVOCATION_BOUND_MS = 60_000;

/** What the run of one outbox schedule saw and left behind, for the invariants. */
export interface OutboxRun {
  id: string;
  schedule: OutboxSchedule;
  writes: PlannedWrite[];
  traffic: OutboxTraffic;
  sends: SendLog;
  claims: ClaimLog;
  /** Invocations that died at their point, and that stalled at it. */
  crashes: number;
  stalls: number;
  /** Sweeps the drain needed (MAX_DRAIN_ROUNDS + 1: it did not empty). */
  drainRounds: number;
  outcome: OutboxOutcome;
}

interface RunContext {
  world: OutboxWorld;
  clock: TestClock;
  stream: MarkerStream;
  queueUrl: string;
  run: Omit<OutboxRun, 'outcome' | 'drainRounds'>;
  invocations: OutboxInvocation[];
}

/**
 * Runs one outbox schedule against the real `Outbox`, relay and sweeper on DynamoDB Local and the
 * SQS emulator behind fault proxies: the steps with the seeded faults, then a drain without faults
 * that sweeps until nothing is pending — and observes the queue and the table.
 */
export async function runOutboxSchedule(world: OutboxWorld, schedule: OutboxSchedule): Promise<OutboxRun> {
  const id = `o${randomUUID().slice(0, 8)}`;
  const clock = createTestClock(CLOCK_START_MS);
  const sends = new SendLog();
  const traffic = new OutboxTraffic(schedule.faults, id, sends);
  const groups = Array.from({ length: OUTBOX_GROUPS }, (_, group) => `${id}-g${group}`);
  const { QueueUrl } = await world.sqs.send(
    new CreateQueueCommand({ QueueName: `${id}.fifo`, Attributes: { FifoQueue: 'true' } }),
  );
  const queueUrl = String(QueueUrl);
  const producerClient = dynamoDbClientVia(world.dynamodbProxy);
  const context: RunContext = {
    world,
    clock,
    stream: new MarkerStream(SHARDS),
    queueUrl,
    run: { id, schedule, writes: [], traffic, sends, claims: new ClaimLog(), crashes: 0, stalls: 0 },
    invocations: [],
  };
  const producer = new OutboxProducer({
    client: producerClient,
    layout: world.layout,
    clock,
    runId: id,
    answers: traffic,
  });
  try {
    await world.dynamodb.send(
      new PutItemCommand({
        TableName: world.layout.tableName,
        Item: { [world.layout.partitionKey]: { S: takenKey(id) }, [world.layout.sortKey]: { S: 'order' } },
      }),
    );
    world.dynamodbProxy.setPlan(traffic.plan);
    world.sqsProxy.setPlan(traffic.plan, traffic.unanswered);
    let downSteps = 0;
    for (const step of schedule.steps) {
      clock.advance(STEP_MS);
      traffic.sqsDown = downSteps > 0;
      downSteps = Math.max(0, downSteps - 1);
      if (step.kind === 'sqs-down') downSteps = step.steps;
      else await runStep(step, context, producer);
    }
    traffic.sqsDown = false;
    traffic.faults = false;
    const drainRounds = await drain(context, groups);
    const outcome = await observeOutbox(world, world.layout, queueUrl, {
      keys: context.run.writes.flatMap((write) => write.keys),
      groups,
      businessKeys: [...new Set([takenKey(id), ...context.run.writes.map((write) => write.businessKey)])],
    });
    return { ...context.run, drainRounds, outcome };
  } finally {
    world.dynamodbProxy.setPlan(noFaults);
    world.sqsProxy.setPlan(noFaults);
    for (const invocation of context.invocations) invocation.destroy();
    producerClient.destroy();
    await world.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
    await removeMarkers(world, groups);
  }
}

async function runStep(step: OutboxStep, context: RunContext, producer: OutboxProducer): Promise<void> {
  switch (step.kind) {
    case 'write':
      return write(context, producer, step);
    case 'relay':
      return relay(context, step.shard, step.crash);
    case 'sweep':
      await Promise.all(
        Array.from({ length: step.sweepers }, (_, index) =>
          sweepOnce(context, index === 0 ? step.crash : undefined),
        ),
      );
      return;
    case 'relay-and-sweep':
      await Promise.all([relay(context, step.shard), sweepOnce(context)]);
      return;
    case 'stall':
      return stall(context, step.shard, step.at);
    case 'clock-jump':
      context.clock.advance(PAST_CLAIM_MS);
      return;
    case 'sqs-down':
      return;
  }
}

/** The producer's write; the markers it inserted go on the stream, in its group's shard. */
async function write(
  context: RunContext,
  producer: OutboxProducer,
  { groups, canceled, lostAnswer }: Extract<OutboxStep, { kind: 'write' }>,
) {
  const planned = await producer.write(context.run.writes.length, groups, canceled, lostAnswer);
  context.run.writes.push(planned);
  const markers = await insertedMarkers(context.world.dynamodb, context.world.layout, planned);
  for (const { position, image } of markers) context.stream.insert(groups[position] as number, image);
}

/** One relay invocation with the shard's next batch; Lambda's event source reads its answer. */
async function relay(context: RunContext, shard: number, crash?: OutboxHalt): Promise<void> {
  const event = context.stream.next(shard);
  if (event.Records.length === 0) return; // nothing new on the shard: no invocation
  const invocation = invoke(context, crash && { ...crash, as: 'crash' });
  const answer = await untilDoneOrHalted(invocation, relayOf(invocation, event));
  if (answer === 'halted') context.run.crashes++;
  context.stream.settle(shard, event, answer === 'halted' || answer === 'failed' ? 'crashed' : answer);
}

/** One sweeper run; `crash` makes it die at a point. */
async function sweepOnce(context: RunContext, crash?: OutboxHalt): Promise<void> {
  const invocation = invoke(context, crash && { ...crash, as: 'crash' });
  const running = sweep({ ...invocation.sender, sweepAfterMs: 0, stuckAfterMs: 60_000 });
  if ((await untilDoneOrHalted(invocation, running)) === 'halted') context.run.crashes++;
}

/**
 * A relay that stalls at a point (a frozen container, a long GC pause): its claims expire, a
 * sweeper runs, then it goes on. Lambda has timed it out by then, so its answer is not read.
 */
async function stall(context: RunContext, shard: number, at: OutboxHalt): Promise<void> {
  const event = context.stream.next(shard);
  if (event.Records.length === 0) return;
  const invocation = invoke(context, { ...at, as: 'stall' });
  const running = relayOf(invocation, event);
  const first = await untilDoneOrHalted(invocation, running);
  if (first !== 'halted') {
    context.stream.settle(shard, event, first === 'failed' ? 'crashed' : first);
    return;
  }
  context.run.stalls++;
  context.clock.advance(PAST_CLAIM_MS);
  await sweepOnce(context);
  invocation.resume();
  await bounded(running);
  context.stream.settle(shard, event, 'crashed');
}

function invoke(context: RunContext, halt?: InvocationOptions['halt']): OutboxInvocation {
  const options: InvocationOptions = {
    dynamodbProxy: context.world.dynamodbProxy,
    sqsProxy: context.world.sqsProxy,
    layout: context.world.layout,
    queueUrl: context.queueUrl,
    clock: context.clock,
    skewMs: skewedNow(context.clock, context.run.schedule.clockSkewsMs, context.invocations.length).skewMs,
    claims: context.run.claims,
    sends: context.run.sends,
    halt,
  };
  const invocation = new OutboxInvocation(options);
  context.invocations.push(invocation);
  return invocation;
}

function relayOf(
  invocation: OutboxInvocation,
  event: DynamoDBStreamEvent,
): Promise<DynamoDBBatchResponse | 'failed'> {
  return relayBatch(event, invocation.sender).catch((): 'failed' => 'failed');
}

/** Its answer, `failed` if it threw, or `halted` once it halted and what it had on the wire landed. */
async function untilDoneOrHalted<T>(
  invocation: OutboxInvocation,
  running: Promise<T>,
): Promise<T | 'failed' | 'halted'> {
  const answer = await bounded(
    Promise.race([running.catch((): 'failed' => 'failed'), invocation.halted.then((): 'halted' => 'halted')]),
  );
  if (answer === 'halted') await invocation.settle();
  return answer;
}

/**
 * Without faults, sweeps — each after the clock passed every claim — until no marker is left.
 * Returns how many it took; one more than the most when some are still left.
 */
async function drain(context: RunContext, groups: readonly string[]): Promise<number> {
  for (let round = 0; round <= MAX_DRAIN_ROUNDS; round++) {
    context.clock.advance(PAST_CLAIM_MS);
    if ((await markersLeft(context.world.dynamodb, context.world.layout, groups)).length === 0) return round;
    if (round < MAX_DRAIN_ROUNDS) await sweepOnce(context);
  }
  return MAX_DRAIN_ROUNDS + 1;
}

/** What a broken schedule left pending is removed, so that the next schedule's sweepers never see it. */
async function removeMarkers(world: OutboxWorld, groups: readonly string[]): Promise<void> {
  for (const marker of await markersLeft(world.dynamodb, world.layout, groups)) {
    await world.dynamodb.send(
      new DeleteItemCommand({
        TableName: world.layout.tableName,
        Key: {
          [world.layout.partitionKey]: { S: groupPartition(marker.groupId) },
          [world.layout.sortKey]: { S: marker.order },
        },
      }),
    );
  }
}

async function bounded<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(`an outbox invocation neither answered nor halted in ${INVOCATION_BOUND_MS} ms`),
            ),
          INVOCATION_BOUND_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

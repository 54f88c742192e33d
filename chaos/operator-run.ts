import { randomUUID } from 'node:crypto';
import { DeleteItemCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DISCARDED_ID_PREFIX, type DiscardResult, discardDeadLetters } from '../cli/dead-letter-discard.js';
import { listDeadLetters } from '../cli/dead-letter-list.js';
import { type RedriveResult, redriveDeadLetters } from '../cli/dead-letter-redrive.js';
import { RedriveInProgressError } from '../cli/operations-errors.js';
import { acquireRedriveLease, REDRIVE_LEASE_ID } from '../cli/redrive-lease.js';
import type { ChaosWorld } from '../harness/chaos-world.js';
import { noFaults } from '../harness/faults.js';
import { seededFaultPlan } from '../harness/seeded-plan.js';
import { createEnvelope } from '../lambdas/common/envelope.js';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';
import type { OperatorCommand, OperatorSchedule } from './operator-schedule.js';
import { dynamoDbClientVia, sqsClientVia } from './sdk-clients.js';

/** One broken promise of an operator's command, for one DLQ message (or the whole DLQ: `*`). */
export interface OperatorViolation {
  message: string;
  rule: 'lost' | 'order' | 'past-horizon-moved' | 'finished-but-left' | 'discarded-without-record';
  detail: string;
}

/** What a schedule's commands came to, for the report. */
export interface OperatorRun {
  violations: OperatorViolation[];
  /** Each command's ending: `redrive finished`, `redrive refused`, `discard threw`… */
  endings: string[];
}

/** What a killed run's requests meet: its process is gone. */
class ProcessDiedError extends Error {
  override readonly name = 'ProcessDiedError';
}

/** The sandbox's TTL (19 days): the dedup horizon a redrive judges by. */
const TTL_SECONDS = String(19 * 86_400);
/** Short bounds, so that a schedule whose commands hold each other's messages still ends in seconds. */
const REDRIVE_TIMEOUT_MS = 4_000;
const OTHER_TIMEOUT_MS = 3_000;

/**
 * Runs one operator schedule: fills a FIFO DLQ, runs its steps (the commands of a step at once)
 * with its faults on every request they make, the consumer taking what reaches the queue, then
 * checks what stayed true (DESIGN §11, operations.md): no message lost (each is in the DLQ, on the
 * queue or discarded), each group in order on the queue, none past the dedup horizon moved, a
 * redrive alone that said finished left only what it accounted for, and a discarded message has
 * its record.
 */
export async function runOperatorSchedule(
  world: ChaosWorld,
  schedule: OperatorSchedule,
): Promise<OperatorRun> {
  const id = `o${randomUUID().slice(0, 8)}`;
  const [queueUrl, dlqUrl] = await Promise.all([fifoQueue(world.sqs, id), fifoQueue(world.sqs, `${id}-dlq`)]);
  const keys = schedule.messages.map((_, index) => `${id}-m${index}`);
  const groupOf = (index: number) => `${id}-g${schedule.messages[index]?.group}`;
  const messageIds: string[] = [];
  for (const [index, { past }] of schedule.messages.entries()) {
    const envelope = createEnvelope({
      type: 'Chaos',
      groupId: groupOf(index),
      key: keys[index],
      payload: { index },
    });
    const body = JSON.stringify(past ? { ...envelope, publishedAt: '2020-01-01T00:00:00.000Z' } : envelope);
    const { MessageId } = await world.sqs.send(
      new SendMessageCommand({
        QueueUrl: dlqUrl,
        MessageBody: body,
        MessageGroupId: groupOf(index),
        MessageDeduplicationId: randomUUID(),
      }),
    );
    messageIds.push(String(MessageId));
  }
  const resources = {
    queueUrl,
    dlqUrl,
    idempotencyTableName: world.idempotencyTable,
    idempotencyTtlSeconds: TTL_SECONDS,
  };
  // A lease an earlier schedule could not give back (its release faulted) is not this one's.
  await world.dynamodb.send(
    new DeleteItemCommand({ TableName: world.idempotencyTable, Key: { id: { S: REDRIVE_LEASE_ID } } }),
  );
  const clients = { sqs: sqsClientVia(world.sqsProxy), dynamodb: dynamoDbClientVia(world.dynamodbProxy) };
  const plan = seededFaultPlan(schedule.faults);
  world.sqsProxy.setPlan(plan);
  world.dynamodbProxy.setPlan(plan);
  const arrivals: string[] = [];
  const consumer = schedule.consumerRunning ? consume(world.sqs, queueUrl, arrivals) : undefined;
  const violations: OperatorViolation[] = [];
  const endings: string[] = [];
  const discarded = new Set<string>();
  /** The clients of killed runs, closed with the others. */
  const dying: { destroy(): void }[] = [];
  try {
    for (const step of schedule.steps) {
      await Promise.all(
        step.map(async (command) => {
          const ending = await runCommand(command);
          endings.push(ending.text);
          if (ending.redrive) await checkFinished(ending.redrive, command, step.length === 1);
          for (const each of ending.discard?.discarded ?? []) discarded.add(each.messageId);
        }),
      );
    }
  } finally {
    world.sqsProxy.setPlan(noFaults);
    world.dynamodbProxy.setPlan(noFaults);
    await consumer?.stop();
    clients.sqs.destroy();
    clients.dynamodb.destroy();
    for (const client of dying) client.destroy();
  }
  arrivals.push(...(await drainAll(world.sqs, queueUrl)));
  await checkOutcome();
  await Promise.all(
    [queueUrl, dlqUrl].map((url) => world.sqs.send(new DeleteQueueCommand({ QueueUrl: url }))),
  );
  return { violations, endings };

  async function runCommand(
    command: OperatorCommand,
  ): Promise<{ text: string; redrive?: RedriveResult; discard?: DiscardResult }> {
    try {
      switch (command.kind) {
        case 'redrive': {
          const own = command.killAfter === undefined ? clients : dyingClients(command.killAfter);
          const lease = await acquireRedriveLease(own.dynamodb, world.idempotencyTable, REDRIVE_TIMEOUT_MS);
          const redrive = await redriveDeadLetters(own.sqs, resources, {
            timeoutMs: REDRIVE_TIMEOUT_MS,
            ...(command.group === undefined ? {} : { groupId: `${id}-g${command.group}` }),
            ...(command.limit === undefined ? {} : { limit: command.limit }),
          }).finally(() => lease.release().catch(() => undefined));
          return { text: `redrive ${redrive.finished ? 'finished' : 'unfinished'}`, redrive };
        }
        case 'discard': {
          const ids = command.indexes.map((index) => messageIds[index] as string);
          const discard = await discardDeadLetters(clients, resources, ids, 'chaos', {
            timeoutMs: OTHER_TIMEOUT_MS,
          });
          return { text: `discard ${discard.notFound.length === 0 ? 'found all' : 'missed some'}`, discard };
        }
        case 'list': {
          const listing = await listDeadLetters(clients.sqs, dlqUrl, { timeoutMs: OTHER_TIMEOUT_MS });
          return { text: `list ${listing.end}` };
        }
      }
    } catch (error) {
      if (error instanceof RedriveInProgressError) return { text: 'redrive refused' };
      if (error instanceof ProcessDiedError || (error as Error).cause instanceof ProcessDiedError)
        return { text: `${command.kind} killed` };
      return { text: `${command.kind} threw` };
    }
  }

  /** Clients of a process that dies after `requests` requests: every later one fails, as none is made. */
  function dyingClients(requests: number): typeof clients {
    const own = { sqs: sqsClientVia(world.sqsProxy), dynamodb: dynamoDbClientVia(world.dynamodbProxy) };
    dying.push(own.sqs, own.dynamodb);
    let made = 0;
    const die = { step: 'initialize', name: 'processDies' } as const;
    const middleware = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
      made++;
      if (made > requests) throw new ProcessDiedError();
      return next(args);
    };
    own.sqs.middlewareStack.add(middleware as never, die);
    own.dynamodb.middlewareStack.add(middleware as never, die);
    return own;
  }

  /**
   * A redrive without `--group` or `--limit` that ran alone and said finished left in the DLQ only
   * what it accounted for: past the horizon or without a key (`skipped`), and moved ones that came
   * back (`returned`; none here). SQS's counts are exact on the emulator.
   */
  async function checkFinished(result: RedriveResult, command: OperatorCommand, alone: boolean) {
    if (!alone || !result.finished || command.kind !== 'redrive') return;
    if (command.group !== undefined || command.limit !== undefined) return;
    const inDlq = await messagesInQueue(world.sqs, dlqUrl);
    const accounted = result.skipped.length + result.returned;
    if (inDlq > accounted) {
      violations.push({
        message: '*',
        rule: 'finished-but-left',
        detail: `the redrive said finished, accounting for ${accounted}; the DLQ held ${inDlq}`,
      });
    }
  }

  async function checkOutcome() {
    const arrived = new Set(arrivals);
    // Nothing but the schedule's messages is ever in its DLQ, each once.
    const missing: string[] = [];
    for (const [index, key] of keys.entries()) {
      const messageId = messageIds[index] as string;
      if (schedule.messages[index]?.past && arrived.has(key)) {
        violations.push({
          message: key,
          rule: 'past-horizon-moved',
          detail: 'a message past the dedup horizon reached the queue',
        });
      }
      if (discarded.has(messageId) && !(await hasDiscardRecord(messageId))) {
        violations.push({
          message: key,
          rule: 'discarded-without-record',
          detail: 'reported discarded, no record kept',
        });
      }
      if (!arrived.has(key) && !(await hasDiscardRecord(messageId))) missing.push(key);
    }
    const inDlq = await messagesInQueue(world.sqs, dlqUrl);
    if (inDlq < missing.length) {
      violations.push({
        message: '*',
        rule: 'lost',
        detail: `${missing.length} neither reached the queue nor were discarded, and the DLQ holds ${inDlq}`,
      });
    }
    // Each group's first arrivals keep the order the messages were dead-lettered in.
    const firsts = arrivals.filter((key, index) => arrivals.indexOf(key) === index);
    const byGroup = new Map<string, number[]>();
    for (const key of firsts) {
      const index = keys.indexOf(key);
      byGroup.set(groupOf(index), [...(byGroup.get(groupOf(index)) ?? []), index]);
    }
    for (const [group, order] of byGroup) {
      if (order.some((index, i) => i > 0 && index < (order[i - 1] as number))) {
        violations.push({ message: group, rule: 'order', detail: `arrived as messages ${order.join(', ')}` });
      }
    }
  }

  async function hasDiscardRecord(messageId: string): Promise<boolean> {
    const { Item } = await world.dynamodb.send(
      new GetItemCommand({
        TableName: world.idempotencyTable,
        Key: { id: { S: `${DISCARDED_ID_PREFIX}${messageId}` } },
        ConsistentRead: true,
      }),
    );
    return Item !== undefined;
  }
}

async function fifoQueue(sqs: SQSClient, name: string): Promise<string> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${name}.fifo`,
      Attributes: { FifoQueue: 'true', VisibilityTimeout: '30' },
    }),
  );
  return String(QueueUrl);
}

/** The consumer, while the commands run: takes each message that reaches the queue, in order, and deletes it. */
function consume(sqs: SQSClient, queueUrl: string, arrivals: string[]) {
  let running = true;
  const loop = (async () => {
    while (running) arrivals.push(...(await receiveAndDelete(sqs, queueUrl, 0.2)));
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** Everything left on the queue, in the order received. */
async function drainAll(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const keys: string[] = [];
  for (;;) {
    const received = await receiveAndDelete(sqs, queueUrl, 0);
    if (received.length === 0 && (await messagesInQueue(sqs, queueUrl)) === 0) return keys;
    keys.push(...received);
  }
}

async function receiveAndDelete(sqs: SQSClient, queueUrl: string, waitSeconds: number): Promise<string[]> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: Math.ceil(waitSeconds),
    }),
  );
  if (Messages.length === 0) return [];
  await sqs.send(
    new DeleteMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: Messages.map((message, index) => ({
        Id: String(index),
        ReceiptHandle: message.ReceiptHandle,
      })),
    }),
  );
  return Messages.map((message) => (JSON.parse(String(message.Body)) as { key: string }).key);
}

import { DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ChaosWorld } from '../harness/chaos-world.js';
import type { IdempotencyRecord } from '../lambdas/idempotency/record.js';
import { CHAOS_NAMESPACES } from './chaos-operations.js';

/** Where a schedule left its messages: their records, the DLQ, and the transactional effects. */
export interface ScheduleOutcome {
  /** Key → its record in whichever namespace it was processed in. */
  records: Map<string, IdempotencyRecord>;
  /** Key → how many copies of it the DLQ holds, with the reasons. */
  deadLetters: Map<string, string[]>;
  /**
   * Key → the message ids its DLQ copies were sent for (`OriginalMessageId`; none for one SQS moved):
   * one id twice is a DLQ send retried after its answer was lost, on a standard DLQ (DESIGN §5.1).
   */
  deadLetterOrigins: Map<string, (string | undefined)[]>;
  /** Group → keys in the order their transactional effects were applied (a key twice: applied twice). */
  transactionalOrder: Map<string, string[]>;
}

export async function observeOutcome(
  world: ChaosWorld,
  dlqUrl: string,
  keys: string[],
): Promise<ScheduleOutcome> {
  const documents = DynamoDBDocumentClient.from(world.dynamodb);
  const records = new Map<string, IdempotencyRecord>();
  const ids = keys.flatMap((key) =>
    Object.values(CHAOS_NAMESPACES).map((namespace) => `${namespace}#${key}`),
  );
  for (let i = 0; i < ids.length; i += 100) {
    const { Responses } = await documents.send(
      new BatchGetCommand({
        RequestItems: {
          [world.idempotencyTable]: {
            Keys: ids.slice(i, i + 100).map((id) => ({ id })),
            ConsistentRead: true,
          },
        },
      }),
    );
    for (const item of (Responses?.[world.idempotencyTable] ?? []) as IdempotencyRecord[]) {
      records.set(item.id.slice(item.id.indexOf('#') + 1), item);
    }
  }
  const groups = [...new Set(keys.map((key) => key.replace(/-m\d+$/, '')))];
  const transactionalOrder = new Map<string, string[]>();
  const groupIds = groups.flatMap((prefix) => [0, 1, 2].map((group) => `${prefix}-g${group}`));
  const { Responses } = await documents.send(
    new BatchGetCommand({
      RequestItems: { [world.effectsTable]: { Keys: groupIds.map((id) => ({ id })), ConsistentRead: true } },
    }),
  );
  for (const item of (Responses?.[world.effectsTable] ?? []) as { id: string; applied?: string[] }[]) {
    transactionalOrder.set(item.id, item.applied ?? []);
  }
  return { records, ...(await readDeadLetters(world, dlqUrl)), transactionalOrder };
}

/** Every DLQ message, received and deleted: a FIFO queue hides a group's rest while its head is in flight. */
async function readDeadLetters(
  world: ChaosWorld,
  dlqUrl: string,
): Promise<Pick<ScheduleOutcome, 'deadLetters' | 'deadLetterOrigins'>> {
  const deadLetters = new Map<string, string[]>();
  const deadLetterOrigins = new Map<string, (string | undefined)[]>();
  for (;;) {
    const { Messages = [] } = await world.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: dlqUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return { deadLetters, deadLetterOrigins };
    for (const message of Messages) {
      let key = '(not an envelope)';
      try {
        key = (JSON.parse(message.Body ?? '') as { key: string }).key;
      } catch {}
      const reasons = deadLetters.get(key) ?? [];
      reasons.push(message.MessageAttributes?.ErrorName?.StringValue ?? '(moved by SQS)');
      deadLetters.set(key, reasons);
      const origins = deadLetterOrigins.get(key) ?? [];
      origins.push(message.MessageAttributes?.OriginalMessageId?.StringValue);
      deadLetterOrigins.set(key, origins);
    }
    await world.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: dlqUrl,
        Entries: Messages.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
        })),
      }),
    );
  }
}

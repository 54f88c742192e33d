import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';

import { type OperationsCommand, parseCommandLine } from '../../cli/command-line.js';
import { runOperation } from '../../cli/operations-command.js';
import type { Terminal } from '../../cli/terminal.js';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { awsTraceHeaderOf } from '../../lambdas/common/trace-context.js';
import { LOCAL_REGION, localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type SqsEmulator, startSqsEmulator } from '../../sandbox/sqs-emulator.js';
import { createTable, localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import type { SdkClient } from './sdk-faults.js';

// The DLQ tests' FIFO: the sandbox's SQS emulator, started per file with `oneGroupPerReceive`, so a
// receive returns one message group's messages only, as harsh as AWS allows (the run's shared emulator
// fills a receive across groups, which hides a stopping rule that counts on seeing several groups).
// A real emulator rather than a fake over the SDK: the redrive's every request (batches, visibility
// changes, queue attributes) is then answered as SQS answers it, with SQS's FIFO rules.

export interface DlqPipeline {
  queueUrl: string;
  dlqUrl: string;
  idempotencyTtlSeconds: string;
  idempotencyTableName: string;
  /** A ready file naming them, for `oncely … --ready-file`. */
  readyFile: string;
}

export interface DlqWorld {
  emulator: SqsEmulator;
  sqs: SQSClient;
  /** A fresh queue, DLQ and idempotency table (in the run's DynamoDB Local), and a ready file naming them. */
  pipeline(): Promise<DlqPipeline>;
  /** Runs `oncely ARGS --ready-file` in-process: its exit code and what it printed. */
  oncely(
    pipeline: DlqPipeline,
    args: string[],
    ask?: Terminal['ask'],
  ): Promise<{ code: number; text: string }>;
  client(): SQSClient;
  stop(): Promise<void>;
}

/** The sandbox's TTL: 19 days. */
export const TTL_SECONDS = String(19 * 86_400);

export async function startDlqWorld(): Promise<DlqWorld> {
  const emulator = await startSqsEmulator({ oneGroupPerReceive: true });
  const clients: SQSClient[] = [];
  const client = () => {
    const created = new SQSClient({ ...localAwsConfig(emulator.endpoint), maxAttempts: 1 });
    clients.push(created);
    return created;
  };
  const sqs = client();
  const directory = mkdtempSync(join(tmpdir(), 'oncely-dlq-'));
  const dynamodb = localDynamoClient();
  const queue = async (name: string) => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({
        QueueName: `${name}-${randomUUID().slice(0, 8)}.fifo`,
        Attributes: { FifoQueue: 'true' },
      }),
    );
    return String(QueueUrl);
  };
  return {
    emulator,
    sqs,
    client,
    pipeline: async () => {
      const resources = {
        publisherFunctionName: 'none',
        publisherFunctionArn: 'none',
        consumerFunctionName: 'none',
        queueUrl: await queue('queue'),
        queueArn: 'none',
        dlqUrl: await queue('dlq'),
        dlqArn: 'none',
        idempotencyTableName: await createTable(dynamodb, 'dlq-records'),
        idempotencyTtlSeconds: TTL_SECONDS,
      };
      const readyFile = join(directory, `${randomUUID()}.json`);
      const endpoints = { sqs: emulator.endpoint, dynamodb: emulatorEndpoint('dynamodbEndpoint') };
      writeFileSync(readyFile, JSON.stringify({ region: LOCAL_REGION, endpoints, resources, outputs: {} }));
      return { ...resources, readyFile };
    },
    oncely: async (pipeline, args, ask) => {
      const command = parseCommandLine(
        [...args, '--ready-file', pipeline.readyFile],
        {},
      ) as OperationsCommand;
      const printed: string[] = [];
      // Without `ask`, the process's terminal, which under the tests is none.
      const terminal = ask ? { show: () => undefined, ask } : undefined;
      const code = await runOperation(command, { print: (text) => printed.push(text), terminal });
      return { code, text: printed.join('\n') };
    },
    stop: async () => {
      for (const each of clients) each.destroy();
      dynamodb.destroy();
      rmSync(directory, { recursive: true, force: true });
      await emulator.stop();
    },
  };
}

/** An envelope body, published at `publishedAt` (now by default). */
export function envelopeBody(key: string, groupId: string, publishedAt?: string): string {
  const envelope = createEnvelope({ type: 'SendNotification', groupId, key, payload: { key } });
  return JSON.stringify(publishedAt ? { ...envelope, publishedAt } : envelope);
}

/** A body published long before the horizon of a 19-day TTL. */
export const PAST = '2020-01-01T00:00:00.000Z';

/** Puts a message into the DLQ as the consumer would (with its attributes); returns its id. */
export async function deadLetter(
  sqs: SQSClient,
  dlqUrl: string,
  body: string,
  groupId: string,
  attributes: Record<string, MessageAttributeValue> = {
    ErrorName: { DataType: 'String', StringValue: 'HandlerError' },
    ReceiveCount: { DataType: 'Number', StringValue: '3' },
  },
  awsTraceHeader?: string,
): Promise<string> {
  const { MessageId } = await sqs.send(
    new SendMessageCommand({
      QueueUrl: dlqUrl,
      MessageBody: body,
      MessageGroupId: groupId,
      MessageDeduplicationId: randomUUID(),
      MessageAttributes: attributes,
      ...awsTraceHeaderOf(awsTraceHeader),
    }),
  );
  return String(MessageId);
}

/** Receives and deletes everything; the bodies' keys in the order received, with their groups. */
export interface Drained {
  key: string;
  groupId: string;
  messageId: string;
  body: string;
}

export async function drain(sqs: SQSClient, queueUrl: string): Promise<Drained[]> {
  const out: Drained[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        AttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return out;
    for (const message of Messages) {
      let key = '(not an envelope)';
      try {
        key = String((JSON.parse(String(message.Body)) as { key?: string }).key);
      } catch {}
      out.push({
        key,
        groupId: String(message.Attributes?.MessageGroupId),
        messageId: String(message.MessageId),
        body: String(message.Body),
      });
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
        })),
      }),
    );
  }
}

/**
 * Around each receive of `client` on `queueUrl`, another operator (a `dlq list`) holds the oldest 0–3
 * groups, chosen by `random`, and lets them go after: so the receive returns some group, not always
 * the oldest, as SQS, which promises no order between groups, may. Only some: a receive that found
 * nothing but the held groups is made again, since SQS returns a group while there is one.
 */
export function anyGroupPerReceive(
  client: SdkClient,
  other: SQSClient,
  queueUrl: string,
  random: () => number,
): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { QueueUrl?: string; WaitTimeSeconds?: number };
      if (input.QueueUrl !== queueUrl || input.WaitTimeSeconds === undefined) return next(args);
      const held: Message[] = [];
      for (let hidden = Math.floor(random() * 4); hidden > 0; hidden--) {
        const { Messages = [] } = await other.send(
          new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 30 }),
        );
        held.push(...Messages);
      }
      const release = async () => {
        for (let i = 0; i < held.length; i += 10) {
          await other.send(
            new ChangeMessageVisibilityBatchCommand({
              QueueUrl: queueUrl,
              Entries: held.slice(i, i + 10).map((message, index) => ({
                Id: String(index),
                ReceiptHandle: message.ReceiptHandle,
                VisibilityTimeout: 0,
              })),
            }),
          );
        }
      };
      const answer = await next(args).catch(async (error: unknown) => {
        await release();
        throw error;
      });
      await release();
      // SQS returns some group while one is there to return: so the receive again, with none held.
      const { Messages = [] } = answer.output as { Messages?: Message[] };
      return Messages.length === 0 && held.length > 0 ? next(args) : answer;
    },
    { step: 'initialize', name: `anyGroupPerReceive-${randomUUID()}` },
  );
}

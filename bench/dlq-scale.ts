import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { listDeadLetters } from '../cli/dead-letter-list.js';
import { redriveDeadLetters } from '../cli/dead-letter-redrive.js';
import { createEnvelope } from '../lambdas/common/envelope.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import { startSqsEmulator } from '../sandbox/sqs-emulator.js';

// `npm run bench:dlq`: `oncely dlq redrive` and `dlq list` on a DLQ of 10,000 messages over 500
// groups (`-- --messages N --groups G` for others), on the sandbox's SQS emulator with one group per
// receive, as harsh as SQS allows. It checks that every message moved once, each group in order, and
// prints the time and memory each took. The figures are in docs/operations.md; a smaller run is in
// `npm test` (test/cli/dlq-scale.test.ts).

export interface DlqScaleResult {
  messages: number;
  groups: number;
  redrive: { ms: number; moved: number; finished: boolean; requests: Record<string, number> };
  /** Listing a full DLQ reaches the first 10 of each group (a FIFO receive's limit). */
  list: { ms: number; listed: number; end: string; left: number };
  /** Each message arrived on the queue once, and each group in order. */
  complete: boolean;
  /** The process's peak resident memory, emulator included (it runs in this process). */
  peakRssMb: number;
}

export async function runDlqScale(messages: number, groups: number): Promise<DlqScaleResult> {
  const emulator = await startSqsEmulator({ oneGroupPerReceive: true });
  const sqs = new SQSClient(localAwsConfig(emulator.endpoint));
  const requests: Record<string, number> = {};
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      requests[String(context.commandName)] = (requests[String(context.commandName)] ?? 0) + 1;
      return next(args);
    },
    { step: 'initialize', name: 'countRequests' },
  );
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 50);
  try {
    const queue = async (name: string) =>
      String(
        (
          await sqs.send(
            new CreateQueueCommand({
              QueueName: `${name}-${randomUUID().slice(0, 8)}.fifo`,
              Attributes: { FifoQueue: 'true' },
            }),
          )
        ).QueueUrl,
      );
    const resources = {
      queueUrl: await queue('queue'),
      dlqUrl: await queue('dlq'),
      idempotencyTtlSeconds: '1641600',
    };
    await fill(sqs, resources.dlqUrl, messages, groups);

    let started = performance.now();
    const listing = await listDeadLetters(sqs, resources.dlqUrl, { limit: messages, bodyCharacters: 60 });
    const list = {
      ms: Math.round(performance.now() - started),
      listed: listing.messages.length,
      end: listing.end,
      left: listing.left,
    };

    for (const key of Object.keys(requests)) delete requests[key];
    started = performance.now();
    const result = await redriveDeadLetters(sqs, resources, { timeoutMs: 30 * 60_000 });
    const redrive = {
      ms: Math.round(performance.now() - started),
      moved: result.moved,
      finished: result.finished,
      requests: { ...requests },
    };
    const complete = await arrivedOnceInOrder(sqs, resources.queueUrl, messages, groups);
    return { messages, groups, redrive, list, complete, peakRssMb: Math.round(peakRss / 2 ** 20) };
  } finally {
    clearInterval(sampler);
    sqs.destroy();
    await emulator.stop();
  }
}

/** Message `i` of group `g` has key `g-i`; groups interleave in the DLQ, 10 messages at a time. */
async function fill(sqs: SQSClient, dlqUrl: string, messages: number, groups: number): Promise<void> {
  const perGroup = Math.ceil(messages / groups);
  for (let start = 0; start < perGroup; start += 10) {
    for (let group = 0; group < groups; group++) {
      const Entries = [];
      for (let index = start; index < Math.min(start + 10, perGroup); index++) {
        if (group * perGroup + index >= messages) break;
        const envelope = createEnvelope({
          type: 'Scale',
          groupId: `g${group}`,
          key: `g${group}-${index}`,
          payload: { index },
        });
        Entries.push({
          Id: String(index - start),
          MessageBody: JSON.stringify(envelope),
          MessageGroupId: `g${group}`,
          MessageDeduplicationId: envelope.key,
        });
      }
      if (Entries.length > 0) await sqs.send(new SendMessageBatchCommand({ QueueUrl: dlqUrl, Entries }));
    }
  }
}

/** Drains the queue: every key arrived once, and each group's in the order it was sent. */
async function arrivedOnceInOrder(
  sqs: SQSClient,
  queueUrl: string,
  messages: number,
  groups: number,
): Promise<boolean> {
  const next = new Map<string, number>();
  let received = 0;
  let inOrder = true;
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    if (Messages.length === 0) break;
    for (const message of Messages) {
      const { groupId, key } = JSON.parse(String(message.Body)) as { groupId: string; key: string };
      const index = Number(key.slice(key.lastIndexOf('-') + 1));
      if (index !== (next.get(groupId) ?? 0)) inOrder = false;
      next.set(groupId, index + 1);
      received++;
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
  return inOrder && received === messages && next.size === groups;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { messages: { type: 'string' }, groups: { type: 'string' } } });
  const result = await runDlqScale(Number(values.messages ?? 10_000), Number(values.groups ?? 500));
  console.log(JSON.stringify(result, null, 2));
  if (!result.complete || !result.redrive.finished) process.exitCode = 1;
}

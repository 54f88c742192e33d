import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { FunctionThrottledError } from './function-concurrency.js';
import type { InvocationResult } from './lambda-context.js';
import { pause } from './pause.js';
import type { LocalEventSource } from './queue-source.js';
import { BatchGatherer, deleteMessages } from './sqs-batch-gatherer.js';
import type { Redelivery } from './sqs-emulator.js';
import { failedMessageIds, toSqsRecord } from './sqs-event.js';

/** What happened to one batch, for progress reports and tests. */
export interface BatchReport {
  received: number;
  /** Deleted with the receipt handle of their latest receive: some invocation holding it succeeded. */
  deleted: number;
  /** Left on the queue: reported failures, or the whole batch after a function error. */
  retained: number;
  functionError?: string;
}

export interface PollerOptions {
  sqs: SQSClient;
  source: LocalEventSource;
  region: string;
  invoke: (event: SQSEvent) => Promise<InvocationResult>;
  onBatch?: (report: BatchReport) => void;
  /** Long-poll wait per receive; short, so that stop() is quick. */
  waitTimeSeconds?: number;
  /**
   * Delivers a standard queue's batches as SQS's at-least-once delivery may, for tests and demos:
   * each to two invocations at once, then once more after both answered (a copy of a message
   * already done). Each copy is a receive of its own (`receiveAgain`, the SQS emulator's), with its
   * own receipt handle, which replaces the earlier copies': a delete or a visibility change with an
   * earlier one does what SQS documents for it. Nothing changes for a FIFO queue, whose deduplication
   * SQS keeps. Off by default.
   */
  duplicateDeliveries?: { receiveAgain: (queueUrl: string, receiptHandle: string) => Redelivery };
}

/**
 * How Lambda scales an SQS mapping's pollers: 5 concurrent batches at first, then up to 300 more a
 * minute while messages are available, up to `MaximumConcurrency` (1,000 without it); back to 5
 * when traffic is low (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html).
 * On a FIFO queue, the message groups in flight bound it too: a group's messages wait for its
 * batch in flight, so an extra poller finds nothing.
 */
export const POLLER_SCALING = { initial: 5, addedPerMinute: 300 } as const;
/** After a failed receive or delete, before the next try: no hot loop against a failing queue. */
const RETRY_PAUSE_MS = 500;

/**
 * Runs an SQS event source mapping locally with Lambda's rules: batches gathered as Lambda gathers
 * them (see {@link BatchGatherer}: `BatchSize`, the batching window, filters, the 6 MB cap) by
 * pollers that scale as Lambda's do, records deleted only after the function succeeded; with
 * ReportBatchItemFailures only the reported records stay, and a response naming a record that is
 * not in the batch fails the whole batch. A function error leaves the whole batch to come back
 * after the visibility timeout. FIFO order is the queue's: a group is blocked while in flight.
 */
export function startEventSourcePoller(options: PollerOptions): { stop: () => Promise<void> } {
  const { source } = options;
  const controller = new AbortController();
  const running = () => !controller.signal.aborted;
  const gatherer = new BatchGatherer({
    sqs: options.sqs,
    source,
    region: options.region,
    waitTimeSeconds: options.waitTimeSeconds ?? 1,
    isRunning: running,
  });
  const loops = new Set<Promise<void>>();
  // Whether a receive found messages since the last scaling step: Lambda adds pollers only then.
  let busy = false;
  const duplicates = source.queue.url.endsWith('.fifo') ? undefined : options.duplicateDeliveries;
  /** The batch received again, each message with its new receipt handle and receive count. */
  const receivedAgain = (messages: Message[]): Message[] =>
    messages.map((message) => {
      const again = duplicates?.receiveAgain(source.queue.url, String(message.ReceiptHandle));
      if (!again) return message;
      // A message deleted meanwhile has no count any more: one more than the copy before had.
      const count = again.receiveCount ?? Number(message.Attributes?.ApproximateReceiveCount ?? 0) + 1;
      return {
        ...message,
        ReceiptHandle: again.receiptHandle,
        Attributes: { ...message.Attributes, ApproximateReceiveCount: String(count) },
      };
    });

  /** One poller; a scaled-up one ends at its first idle receive, as Lambda scales back. */
  const poll = async (scaledUp: boolean) => {
    let carried: Message[] = [];
    while (running()) {
      try {
        const batch = await gatherer.gather(carried);
        carried = batch.carried;
        if (batch.idle && scaledUp) return;
        if (batch.messages.length === 0) continue;
        busy = true;
        if (!duplicates) {
          await deliver(options, [batch.messages]);
          continue;
        }
        await deliver(options, [batch.messages, receivedAgain(batch.messages)]);
        // The late copy: received once more, after both answered. Its messages are gone by then,
        // unless no copy holding their latest handle succeeded.
        await deliver(options, [receivedAgain(batch.messages)]);
      } catch (error) {
        if (!running()) return;
        console.error(`[oncely sandbox] polling ${source.queue.name} failed: ${String(error)}`);
        await pause(RETRY_PAUSE_MS, controller.signal);
      }
    }
  };
  const start = (scaledUp: boolean) => {
    const loop = poll(scaledUp).finally(() => loops.delete(loop));
    loops.add(loop);
  };
  for (let i = 0; i < Math.min(POLLER_SCALING.initial, source.maxConcurrency); i++) start(false);
  const scaling = setInterval(() => {
    if (busy && loops.size < source.maxConcurrency) start(true);
    busy = false;
  }, 60_000 / POLLER_SCALING.addedPerMinute);

  return {
    stop: async () => {
      clearInterval(scaling);
      controller.abort();
      while (loops.size > 0) await Promise.all(loops);
    },
  };
}

/**
 * Invokes the function with each copy of the batch at once (one, or two received separately), then
 * deletes each message with the receipt handle of every copy that succeeded with it: on SQS, as in
 * the emulator, only the latest receive's handle removes it.
 */
async function deliver(options: PollerOptions, copies: Message[][]): Promise<void> {
  const { sqs, source, region } = options;
  const events = copies.map((messages) => ({
    Records: messages.map((message) => toSqsRecord(message, source.queue.arn, region)),
  }));
  const outcomes = await Promise.all(events.map((event) => invokeOnce(options, event)));
  const succeeded = outcomes.map((outcome, copy) => {
    // Without ReportBatchItemFailures, a successful invocation succeeded for every record.
    const failed = !outcome.ok
      ? 'all'
      : source.reportBatchItemFailures
        ? failedMessageIds(outcome.result, events[copy] as SQSEvent)
        : new Set<string>();
    return (copies[copy] ?? []).filter(
      (message) => failed !== 'all' && !failed.has(String(message.MessageId)),
    );
  });
  for (const done of succeeded) await deleteMessages(sqs, source.queue.url, done);
  // The last copy holds each message's latest receipt handle.
  const received = copies[0]?.length ?? 0;
  const deleted = succeeded[succeeded.length - 1]?.length ?? 0;
  const failure = outcomes.find((outcome) => !outcome.ok);
  options.onBatch?.({
    received,
    deleted,
    retained: received - deleted,
    functionError:
      failure && !failure.ok ? `${failure.error.errorType}: ${failure.error.errorMessage}` : undefined,
  });
}

async function invokeOnce(options: PollerOptions, event: SQSEvent): Promise<InvocationResult> {
  try {
    return await options.invoke(event);
  } catch (error) {
    if (!(error instanceof FunctionThrottledError)) throw error;
    // Throttled: the whole batch stays, to come back after the visibility timeout with its receive
    // count grown, and so to the DLQ past maxReceiveCount, as on AWS.
    const errorMessage = `${error.message} (${error.reason})`;
    return { ok: false, error: { errorType: 'TooManyRequestsException', errorMessage } };
  }
}

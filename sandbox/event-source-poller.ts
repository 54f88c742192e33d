import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { FunctionThrottledError } from './function-concurrency.js';
import type { InvocationResult } from './lambda-context.js';
import { pause } from './pause.js';
import type { LocalEventSource } from './queue-source.js';
import { BatchGatherer, deleteMessages } from './sqs-batch-gatherer.js';
import { failedMessageIds } from './sqs-event.js';

/** What happened to one batch, for progress reports and tests. */
export interface BatchReport {
  received: number;
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
   * already done). Nothing changes for a FIFO queue, whose deduplication SQS keeps. `false` by default.
   */
  duplicateDeliveries?: boolean;
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
  const duplicating = options.duplicateDeliveries === true && !source.queue.url.endsWith('.fifo');

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
        const event = { Records: batch.records };
        await deliver(options, batch.messages, event, duplicating ? 2 : 1);
        // The late copy: its messages are gone by then, so its deletes change nothing and its
        // visibility changes are refused, as a late duplicate's on SQS once its original was deleted.
        if (duplicating) await deliver(options, batch.messages, event, 1);
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
 * Invokes the function with the batch, `copies` times at once, and deletes each message some
 * invocation succeeded with: one delete removes it, whoever else still holds it.
 */
async function deliver(
  options: PollerOptions,
  messages: Message[],
  event: SQSEvent,
  copies: number,
): Promise<void> {
  const { sqs, source } = options;
  const outcomes = await Promise.all(Array.from({ length: copies }, () => invokeOnce(options, event)));
  // Without ReportBatchItemFailures, a successful invocation succeeded for every record.
  const failedIn = outcomes.map((outcome) =>
    !outcome.ok
      ? 'all'
      : source.reportBatchItemFailures
        ? failedMessageIds(outcome.result, event)
        : new Set<string>(),
  );
  const done = messages.filter((message) =>
    failedIn.some((failed) => failed !== 'all' && !failed.has(String(message.MessageId))),
  );
  await deleteMessages(sqs, source.queue.url, done);
  const failure = outcomes.find((outcome) => !outcome.ok);
  options.onBatch?.({
    received: messages.length,
    deleted: done.length,
    retained: messages.length - done.length,
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

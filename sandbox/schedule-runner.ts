import { randomUUID } from 'node:crypto';
import type { ScheduledEvent } from 'aws-lambda';
import { type AsyncAttempt, type AsyncInvokeConfig, invokeAsynchronously } from './async-invocation.js';
import type { InvocationResult } from './lambda-context.js';
import type { LocalSchedule } from './schedule-rules.js';

export interface ScheduleRunnerOptions {
  schedule: LocalSchedule;
  /** Runs at this interval instead of the rule's rate (the sandbox's `scheduleIntervalMs`). */
  intervalMs?: number;
  region: string;
  accountId: string;
  invoke: (functionName: string, event: ScheduledEvent, awsRequestId: string) => Promise<InvocationResult>;
  /** A target's `AWS::Lambda::EventInvokeConfig`; Lambda's defaults (2 retries, 6 hours) without one. */
  asyncInvokeConfigOf?: (functionName: string) => AsyncInvokeConfig | undefined;
  /** The waits before a failed run's retries (the sandbox's `asyncRetryDelaysMs`); Lambda's 1 and 2 minutes by default. */
  asyncRetryDelaysMs?: readonly number[];
  /** Called after each invocation of a target, its retries included. */
  onRun?: (functionName: string, result: InvocationResult, attempt: AsyncAttempt) => void;
}

/**
 * Runs an EventBridge schedule rule locally: the first run one interval after the start, then on
 * every tick of the interval, each target invoked with EventBridge's scheduled event. EventBridge
 * invokes a Lambda target asynchronously, so a tick fires whether or not the previous run is still
 * going (two runs of one rule may overlap, as on AWS), and Lambda retries a failed run as it retries
 * any asynchronous invocation ({@link invokeAsynchronously}).
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-run-lambda-schedule.html
 * `stop()` cancels the next tick and every retry not yet started, and waits for the runs in progress.
 */
export function startScheduleRunner(options: ScheduleRunnerOptions): { stop: () => Promise<void> } {
  const intervalMs = options.intervalMs ?? options.schedule.intervalMs;
  const controller = new AbortController();
  const running = new Set<Promise<void>>();
  let due = Date.now() + intervalMs;
  const tick = () => {
    const run = runOnce(options, controller.signal);
    running.add(run);
    void run.finally(() => running.delete(run));
    // This run was the one due: the next is at least one interval on, even when Date.now() reads
    // a little behind the monotonic clock the timer fired by (or was stepped back).
    const now = Date.now();
    due += intervalMs;
    while (due <= now) due += intervalMs;
    timer = setTimeout(tick, due - now);
  };
  let timer = setTimeout(tick, intervalMs);
  return {
    stop: async () => {
      controller.abort();
      clearTimeout(timer);
      await Promise.all(running);
    },
  };
}

async function runOnce(options: ScheduleRunnerOptions, signal: AbortSignal): Promise<void> {
  const { schedule } = options;
  const event = scheduledEvent(schedule.arn, options.region, options.accountId);
  await Promise.all(
    schedule.functionNames.map(async (functionName) => {
      try {
        await invokeAsynchronously({
          invoke: (awsRequestId) => options.invoke(functionName, event, awsRequestId),
          config: options.asyncInvokeConfigOf?.(functionName),
          retryDelaysMs: options.asyncRetryDelaysMs,
          signal,
          onAttempt: (result, attempt) => options.onRun?.(functionName, result, attempt),
        });
      } catch (error) {
        console.error(
          `[oncely sandbox] schedule ${schedule.name}: running ${functionName} failed: ${String(error)}`,
        );
      }
    }),
  );
}

/** The event EventBridge sends a target of a schedule rule. */
function scheduledEvent(ruleArn: string, region: string, account: string): ScheduledEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account,
    // EventBridge gives the time to the second.
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region,
    resources: [ruleArn],
    detail: {},
  };
}

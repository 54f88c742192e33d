import { randomUUID } from 'node:crypto';
import type { ScheduledEvent } from 'aws-lambda';
import type { InvocationResult } from './lambda-context.js';
import type { LocalSchedule } from './schedule-rules.js';

export interface ScheduleRunnerOptions {
  schedule: LocalSchedule;
  /** Runs at this interval instead of the rule's rate (the sandbox's `scheduleIntervalMs`). */
  intervalMs?: number;
  region: string;
  accountId: string;
  invoke: (functionName: string, event: ScheduledEvent) => Promise<InvocationResult>;
  /** Called after each invocation of a target. */
  onRun?: (functionName: string, result: InvocationResult) => void;
}

/**
 * Runs an EventBridge schedule rule locally: the first run one interval after the start, then on
 * every tick of the interval, each target invoked with EventBridge's scheduled event. A run still
 * going at the next tick makes the runner skip that tick, so two runs of one rule never overlap.
 * `stop()` cancels the next tick and waits for a run in progress.
 */
export function startScheduleRunner(options: ScheduleRunnerOptions): { stop: () => Promise<void> } {
  const intervalMs = options.intervalMs ?? options.schedule.intervalMs;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let due = Date.now() + intervalMs;
  const tick = () => {
    running = runOnce(options).finally(() => {
      const now = Date.now();
      while (due <= now) due += intervalMs;
      if (!stopped) timer = setTimeout(tick, due - now);
    });
  };
  let timer = setTimeout(tick, intervalMs);
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

async function runOnce(options: ScheduleRunnerOptions): Promise<void> {
  const { schedule } = options;
  const event = scheduledEvent(schedule.arn, options.region, options.accountId);
  await Promise.all(
    schedule.functionNames.map(async (functionName) => {
      try {
        options.onRun?.(functionName, await options.invoke(functionName, event));
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

import { setTimeout as sleep } from 'node:timers/promises';
import {
  ListMessageMoveTasksCommand,
  type ListMessageMoveTasksResultEntry,
  type SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import type { PipelineResources } from '../lib/stack-outputs';
import { MoveTaskAlreadyRunningError, MoveTaskFailedError } from './operations-errors';

export interface RedriveOptions {
  /** How long to wait for the move to finish; it goes on in the background after that. */
  timeoutMs?: number;
  pollIntervalMs?: number;
}

export type RedriveResult =
  | { status: 'COMPLETED'; moved: number }
  /** Still moving when the wait ended; SQS carries on without us. */
  | { status: 'RUNNING'; moved: number; toMove?: number };

const DEFAULT_TIMEOUT_MS = 5 * 60_000;
const DEFAULT_POLL_INTERVAL_MS = 1_000;

/**
 * Moves every message of the DLQ back to the pipeline's queue with an SQS message move task, which
 * keeps each group's order, and waits for it. The destination is given explicitly: the messages the
 * consumer dead-lettered itself carry no `DeadLetterQueueSourceArn` for SQS to find it by. Redriven
 * messages keep their body and so their envelope key: the consumer recognises what already completed
 * (DESIGN §2). Messages in flight (another `oncely dlq list` running) are not moved.
 */
export async function redriveDeadLetters(
  sqs: SQSClient,
  resources: Pick<PipelineResources, 'dlqArn' | 'queueArn'>,
  options: RedriveOptions = {},
): Promise<RedriveResult> {
  const { dlqArn, queueArn } = resources;
  const [previous] = await listTasks(sqs, dlqArn);
  if (previous?.Status === 'RUNNING') throw alreadyRunning(dlqArn, previous);
  let taskHandle: string | undefined;
  try {
    ({ TaskHandle: taskHandle } = await sqs.send(
      new StartMessageMoveTaskCommand({ SourceArn: dlqArn, DestinationArn: queueArn }),
    ));
  } catch (error) {
    // Someone else started one between our check and our start.
    if (error instanceof Error && /already/i.test(error.message)) throw alreadyRunning(dlqArn);
    throw error;
  }

  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  for (;;) {
    const task = ourTask(await listTasks(sqs, dlqArn), taskHandle, previous?.StartedTimestamp);
    const moved = task?.ApproximateNumberOfMessagesMoved ?? 0;
    if (task?.Status === 'COMPLETED') return { status: 'COMPLETED', moved };
    if (task?.Status === 'FAILED' || task?.Status === 'CANCELLED') {
      throw new MoveTaskFailedError(
        `The redrive of ${dlqArn} ended ${task.Status} after moving ${moved} messages` +
          `${task.FailureReason ? ` (${task.FailureReason})` : ''}. What was not moved is still in the DLQ: ` +
          'check it with `oncely dlq list` and run `oncely dlq redrive` again.',
      );
    }
    if (Date.now() >= deadline) {
      return { status: 'RUNNING', moved, toMove: task?.ApproximateNumberOfMessagesToMove };
    }
    await sleep(options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS);
  }
}

/** The DLQ's move tasks, most recent first (SQS keeps the last 10). */
async function listTasks(sqs: SQSClient, dlqArn: string): Promise<ListMessageMoveTasksResultEntry[]> {
  const { Results = [] } = await sqs.send(
    new ListMessageMoveTasksCommand({ SourceArn: dlqArn, MaxResults: 10 }),
  );
  return Results;
}

/**
 * Our task: the one with our handle while it runs (SQS shows a handle only then); once it ended,
 * the most recent ended task started after the one that was there before ours. Timestamps are
 * SQS's own, so no clock skew; until our task shows (the list may lag), nothing matches.
 */
function ourTask(
  tasks: ListMessageMoveTasksResultEntry[],
  taskHandle: string | undefined,
  previousStartedAt: number | undefined,
): ListMessageMoveTasksResultEntry | undefined {
  return (
    tasks.find((task) => task.TaskHandle !== undefined && task.TaskHandle === taskHandle) ??
    tasks.find(
      (task) => task.Status !== 'RUNNING' && (task.StartedTimestamp ?? 0) > (previousStartedAt ?? -1),
    )
  );
}

function alreadyRunning(dlqArn: string, task?: ListMessageMoveTasksResultEntry): MoveTaskAlreadyRunningError {
  const progress = task
    ? ` (started ${new Date(task.StartedTimestamp ?? 0).toISOString()}, ${task.ApproximateNumberOfMessagesMoved ?? 0} of ` +
      `${task.ApproximateNumberOfMessagesToMove ?? '?'} moved)`
    : '';
  return new MoveTaskAlreadyRunningError(
    `A message move task is already running on ${dlqArn}${progress}; SQS runs one at a time. ` +
      'Wait for it to finish (`oncely dlq list` shows what is left), then redrive again if needed.',
  );
}

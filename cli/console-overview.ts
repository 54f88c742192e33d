import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { OutboxResources } from '../lib/constructs/outbox-outputs.js';
import { listUnresolved } from './in-doubt-records.js';
import { NoOutboxError, SeveralOutboxesError } from './operations-errors.js';
import { listPendingOutbox, type OutboxListing } from './outbox-list.js';
import { findOutbox } from './outbox-target.js';
import type { PipelineConnection } from './target.js';

/** A queue's counts, as SQS gives them (approximate). */
export interface QueueCounts {
  role: 'queue' | 'dlq';
  url: string;
  visible: number;
  inFlight: number;
  delayed: number;
}

/** What the console's overview shows: the queues, the records to resolve, the outbox. */
export interface ConsoleOverview {
  target: string;
  queues: QueueCounts[];
  /** Records an operator must resolve; `more` when there are more than the first page. */
  unresolved: { inDoubt: number; retryPending: number; more: boolean };
  /** The target's outbox, when it has exactly one; `more` when more are pending than were counted. */
  outbox?: { pending: number; stuck: number; stuckAfterSeconds: number; more: boolean };
  /** ISO time it was read. */
  readAt: string;
}

/** The first page of the records to resolve: enough to count what an overview shows. */
const UNRESOLVED_COUNTED = 100;
/** Pending outbox messages counted at most: beyond, the overview says "more". */
const OUTBOX_COUNTED = 1_000;

/** Reads the overview: each queue's attributes, the unresolved index's first page, the outbox's pending markers. */
export async function readOverview(pipeline: PipelineConnection): Promise<ConsoleOverview> {
  const { resources } = pipeline;
  const [queue, dlq, unresolved, outbox] = await Promise.all([
    queueCounts(pipeline, 'queue', resources.queueUrl),
    queueCounts(pipeline, 'dlq', resources.dlqUrl),
    listUnresolved(pipeline, { limit: UNRESOLVED_COUNTED }),
    outboxCounts(pipeline),
  ]);
  const count = (status: string) => unresolved.records.filter((record) => record.status === status).length;
  return {
    target: pipeline.name,
    queues: [queue, dlq],
    unresolved: {
      inDoubt: count('IN_DOUBT'),
      retryPending: count('RETRY_PENDING'),
      more: unresolved.next !== undefined,
    },
    ...(outbox ? { outbox } : {}),
    readAt: new Date().toISOString(),
  };
}

async function queueCounts(pipeline: PipelineConnection, role: QueueCounts['role'], url: string) {
  const { Attributes = {} } = await pipeline.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  return {
    role,
    url,
    visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}

/**
 * The oldest `limit` pending messages of the target's outbox, and the outbox; none when the target
 * has no outbox, or several (the console names none: `oncely outbox list --output-prefix` does).
 */
export async function pendingInTheOutbox(
  pipeline: PipelineConnection,
  limit: number,
): Promise<{ outbox: OutboxResources; listing: OutboxListing } | undefined> {
  let outbox: OutboxResources;
  try {
    outbox = findOutbox(pipeline);
  } catch (error) {
    if (error instanceof NoOutboxError || error instanceof SeveralOutboxesError) return undefined;
    throw error;
  }
  return { outbox, listing: await listPendingOutbox(pipeline.dynamodb, outbox, { limit }) };
}

/** The outbox's pending and stuck counts; none when the target has no outbox, or several (the overview names none). */
async function outboxCounts(pipeline: PipelineConnection): Promise<ConsoleOverview['outbox']> {
  const pending = await pendingInTheOutbox(pipeline, OUTBOX_COUNTED);
  if (!pending) return undefined;
  const { outbox, listing } = pending;
  return {
    pending: listing.messages.length,
    stuck: listing.messages.filter((message) => message.ageSeconds > outbox.stuckAfterSeconds).length,
    stuckAfterSeconds: outbox.stuckAfterSeconds,
    more: listing.truncated,
  };
}

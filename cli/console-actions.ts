import { OncelyError } from '../lambdas/common/oncely-error.js';
import type { ConsolePublisher } from './console-publish.js';
import { discardDeadLetters } from './dead-letter-discard.js';
import { redriveDeadLetters } from './dead-letter-redrive.js';
import { resolveAsCompleted } from './in-doubt-records.js';
import { resolveAsRetry } from './in-doubt-retry.js';
import { acquireRedriveLease } from './redrive-lease.js';
import type { PipelineConnection } from './target.js';

/** How long a redrive from the page may take: it moves one key's messages. */
const REDRIVE_TIMEOUT_MS = 60_000;
/** How long a discard waits for the messages, as `oncely dlq discard` does by default. */
const DISCARD_TIMEOUT_MS = 60_000;

/** A request body the console cannot act on; the message says what it needs. */
export class ConsoleActionError extends OncelyError {
  static override readonly errorName: string = 'ConsoleActionError';
  readonly retryable = false;
}

/** What the console's page may do, by path, each the same code as its command (docs/console.md). */
export type ConsoleActions = Record<string, (body: Record<string, unknown>) => Promise<unknown>>;

/**
 * The console's actions on `pipeline`: a redrive of one key's messages (`dryRun` first, for the
 * preview the page shows before it asks), a discard with its reason, a resolution of a record,
 * and with a `publisher` (a sandbox's), a message published.
 */
export function consoleActions(pipeline: PipelineConnection, publisher?: ConsolePublisher): ConsoleActions {
  const { resources } = pipeline;
  return {
    ...(publisher && {
      '/api/publish': (body: Record<string, unknown>) => {
        if (!('payload' in body)) throw new ConsoleActionError('A message needs a payload: any JSON value.');
        const key = body.key === undefined || body.key === '' ? {} : { key: text(body, 'key') };
        return publisher.publish({
          type: text(body, 'type'),
          groupId: text(body, 'groupId'),
          ...key,
          payload: body.payload,
        });
      },
    }),
    '/api/dlq/redrive': async (body) => {
      const key = text(body, 'key');
      const dryRun = body.dryRun === true;
      if (dryRun)
        return redriveDeadLetters(pipeline.sqs, resources, { key, dryRun, timeoutMs: REDRIVE_TIMEOUT_MS });
      // One redrive at a time, as `oncely dlq redrive` takes it.
      const lease = await acquireRedriveLease(
        pipeline.dynamodb,
        resources.idempotencyTableName,
        REDRIVE_TIMEOUT_MS,
      );
      try {
        return await redriveDeadLetters(pipeline.sqs, resources, { key, timeoutMs: REDRIVE_TIMEOUT_MS });
      } finally {
        await lease.release();
      }
    },
    '/api/dlq/discard': (body) => {
      const ids = body.messageIds;
      if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string')) {
        throw new ConsoleActionError(
          'A discard needs messageIds: the ids of the messages, as the DLQ lists them.',
        );
      }
      return discardDeadLetters(pipeline, resources, ids, text(body, 'reason'), {
        timeoutMs: DISCARD_TIMEOUT_MS,
      });
    },
    '/api/in-doubt/resolve': (body) => {
      const id = text(body, 'id');
      if (body.as === 'completed') return resolveAsCompleted(pipeline, id);
      if (body.as === 'retry') return resolveAsRetry(pipeline, id);
      throw new ConsoleActionError(
        'A resolution needs as: "completed" (it happened) or "retry" (run it again).',
      );
    },
  };
}

function text(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ConsoleActionError(`The request needs ${field}, a string.`);
  }
  return value;
}

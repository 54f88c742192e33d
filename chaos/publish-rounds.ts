import type { Context } from 'aws-lambda';
import type { FaultPlan } from '../harness/faults.js';
import type { MessageStatus, PublishResponse } from '../lambdas/publisher/contract.js';
import type { PublishRounds } from './schedule.js';

/**
 * The publish of a schedule as rounds (issue 30, item 1): which request the publisher is serving
 * — the call's first, or one of its re-send rounds — for the plan that faults them, and what each
 * response said, for the invariant that a message once `unknown` never ends `failed` or `blocked`.
 */
export class PublishRoundWatch {
  /** Whether the schedule's own publish is running (not a later `republish` step). */
  active = false;
  #round: 'first' | 'resend' | undefined;
  /** Keys some response of the schedule's publish called `unknown`. */
  readonly reportedUnknown = new Set<string>();
  /** Each key's status in what the schedule's publish resolved with; empty when it threw. */
  readonly final = new Map<string, MessageStatus>();

  /** The publisher handler, watched: a round's requestId has the client's `~`. */
  wrap(
    handler: (event: unknown, context: Context) => Promise<PublishResponse>,
  ): (event: unknown, context: Context) => Promise<PublishResponse> {
    return async (event, context) => {
      const { requestId } = (event ?? {}) as { requestId?: unknown };
      this.#round = typeof requestId === 'string' && requestId.includes('~') ? 'resend' : 'first';
      try {
        const response = await handler(event, context);
        if (this.active) {
          for (const result of response.results) {
            if (result.status === 'unknown') this.reportedUnknown.add(result.key);
          }
        }
        return response;
      } finally {
        this.#round = undefined;
      }
    };
  }

  /**
   * The schedule's round faults: while its publish serves its first request, every SendMessageBatch
   * with a message of the group reaches SQS and loses its answer (on every try, so the messages end
   * `unknown`); while it serves a re-send round, with `later: 'fail-entry'`, SQS fails each call's
   * first entry, not enqueued, on every try (the round answers it `failed`, or `blocked` behind it).
   */
  plan(rounds: PublishRounds | undefined, groupId: string): FaultPlan {
    return (request) => {
      if (!rounds || !this.active || request.operation !== 'SendMessageBatch') return undefined;
      if (this.#round === 'first') {
        const entries = (request.body.Entries ?? []) as { MessageGroupId?: string }[];
        return entries.some((entry) => entry.MessageGroupId === groupId)
          ? { kind: 'lose-answer' }
          : undefined;
      }
      if (this.#round === 'resend' && rounds.later === 'fail-entry') return { kind: 'fail-entry', entry: 0 };
      return undefined;
    };
  }
}

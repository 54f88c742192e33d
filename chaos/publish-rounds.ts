import type { Context } from 'aws-lambda';
import type { FaultPlan } from '../harness/faults.js';
import type { MessageStatus, PublishResponse } from '../lambdas/publisher/contract.js';
import type { PublishRounds } from './schedule.js';

/** A round's invocation that published and then died, every try: its answer never comes back. */
export class RoundDiedError extends Error {
  override readonly name = 'RoundDiedError';
}

/**
 * The publish of a schedule as rounds (issues 30 and 42): which requests the publisher is serving
 * — a call's first, or one of its re-send rounds — for the plan that faults them, what each
 * response said, and what each call resolved with, for the invariants that a message once
 * `unknown` never ends `failed` or `blocked`, and that none on the queue does.
 */
export class PublishRoundWatch {
  /** Whether the schedule's own publish is running (not a later `republish` step). */
  active = false;
  /** The schedule's round faults, for the invocations of its re-send rounds. */
  rounds: PublishRounds | undefined;
  /** Invocations being served, by kind: with two calls at once, both kinds may be. */
  readonly #serving = { first: 0, resend: 0 };
  /**
   * Keys some response of the schedule's publish called `unknown`, per call while the calls run one
   * after the other (`callIndex`); with calls at once, all under the first.
   */
  readonly reportedUnknown: Set<string>[] = [new Set()];
  /** The call whose responses `reportedUnknown` takes, while the calls run one after the other. */
  callIndex = 0;
  /** Each key's status in what each call of the schedule's publish resolved with, in the order they resolved. */
  readonly finals: Map<string, MessageStatus>[] = [];

  /** The publisher handler, watched: a round's requestId has the client's `~`. */
  wrap(
    handler: (event: unknown, context: Context) => Promise<PublishResponse>,
  ): (event: unknown, context: Context) => Promise<PublishResponse> {
    return async (event, context) => {
      const { requestId } = (event ?? {}) as { requestId?: unknown };
      const kind = typeof requestId === 'string' && requestId.includes('~') ? 'resend' : 'first';
      this.#serving[kind]++;
      try {
        const response = await handler(event, context);
        if (this.active) {
          const unknown = this.reportedUnknown[this.callIndex] ?? new Set<string>();
          this.reportedUnknown[this.callIndex] = unknown;
          for (const result of response.results) if (result.status === 'unknown') unknown.add(result.key);
          if (kind === 'resend' && this.rounds?.later === 'die-after-publish') {
            throw new RoundDiedError('the round published, then its invocation died before it answered');
          }
        }
        return response;
      } finally {
        this.#serving[kind]--;
      }
    };
  }

  /**
   * The schedule's round faults. While its publish serves a first request, every SendMessageBatch
   * with a message of the group meets `first` on every try: SQS applies it and the answer is lost
   * (the messages end `unknown`), or SQS fails the group's entry, accepts the others and the answer
   * is lost. While it serves a re-send round: SQS fails each call's first entry on every try
   * (`fail-entry`: the round answers it `failed`, or `blocked` behind it), or loses every answer
   * (`lose-answer`); `die-after-publish` is the handler's (`wrap`), `ok` none.
   */
  plan(rounds: PublishRounds | undefined, groupId: string): FaultPlan {
    this.rounds = rounds;
    return (request) => {
      if (!rounds || !this.active || request.operation !== 'SendMessageBatch') return undefined;
      if (this.#serving.resend > 0) {
        if (rounds.later === 'fail-entry') return { kind: 'fail-entry', entry: 0 };
        if (rounds.later === 'lose-answer') return { kind: 'lose-answer' };
        return undefined;
      }
      if (this.#serving.first === 0) return undefined;
      const entries = (request.body.Entries ?? []) as { MessageGroupId?: string }[];
      const entry = entries.findIndex((each) => each.MessageGroupId === groupId);
      if (entry < 0) return undefined;
      return rounds.first === 'fail-entry-lose-answer'
        ? { kind: 'fail-entry', entry, loseAnswer: true }
        : { kind: 'lose-answer' };
    };
  }
}

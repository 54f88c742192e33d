import { Logger } from '@aws-lambda-powertools/logger';
import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { type ConsumerOperation, fifoBatch, standardBatch } from '../lambdas/consumer/index.js';
import { DynamoDBIdempotencyStore } from '../lambdas/idempotency/index.js';
import { deadLetterLogId, deadLetterMarkId } from '../lambdas/idempotency/record.js';
import { CHAOS_ABORT_TYPE, PlannedAbort } from './batch-abort.js';
import { type ChaosEffects, chaosOperations } from './chaos-operations.js';
import type { EffectLedger } from './effect-ledger.js';
import type { CrashPoint, HoldPoint } from './schedule.js';
import { dynamoDbClientVia, sqsClientVia } from './sdk-clients.js';

/**
 * A crash planned for one invocation: at `point`, on the record whose idempotency id ends in `key`
 * (the batch's first record), or — for the points about the next record's lease — on `next`, the
 * record after it in its group.
 */
export interface PlannedCrash {
  key: string;
  next?: string;
  point: Exclude<CrashPoint, 'before-ack'>;
}

export interface ContainerOptions {
  dynamodbProxy: { endpoint: string };
  sqsProxy: { endpoint: string };
  idempotencyTable: string;
  effectsTable: string;
  ttlSeconds: number;
  dlqUrl: string;
  queueUrl: string;
  now: () => number;
  ledger: EffectLedger;
  /**
   * Keys whose COMPLETED write failed for good at least once, other than by its fence (so
   * at-least-once may re-run them).
   */
  unrecordedCompletions: Set<string>;
  /**
   * Keys for which a write that lets the effect start was sent: an acquire that takes the lease as
   * started, or the start mark of a lease taken ahead. Only such a key's record can be parked IN_DOUBT.
   */
  startsSent: Set<string>;
  /**
   * Keys whose lease may have been started — by a started acquire, a start mark, or a completion
   * sent before its batch failed — and whose give-back then failed on every try: DESIGN §3's and
   * §4.1's residue, a lease that may be parked IN_DOUBT though its effect never ran.
   */
  startedNotGivenBack: Set<string>;
  /**
   * Keys whose record the last delivery of a copy going back to SQS tried to keep alive past the
   * copy's horizon, and could not: the write failed for good, other than by its condition (which
   * says the record is gone or already lives long enough). DESIGN §2's residue: such a copy, once
   * dead-lettered and redriven after the record expired, runs again.
   */
  recordsNotKept: Set<string>;
  /** Message ids whose DLQ mark (written after the send) failed on every try. */
  deadLetterMarksNotWritten?: Set<string>;
  /** `standardBatch` with its `inFlightWaitMs` on a standard queue; `fifoBatch` when absent. */
  standard?: { inFlightWaitMs: number };
  /** Metric name → how often the consumers counted it. */
  metrics?: Map<string, number>;
  /** The operations; the schedules' own (`chaosOperations`) by default. A test plants a broken one. */
  operations?: (effects: ChaosEffects) => Record<string, ConsumerOperation>;
}

/** A request of the consumer's to DynamoDB, once answered (or failed): its kind, the record ids it touches. */
export type AnsweredRequest = { kind: RequestKind; ids: string[]; failed: boolean };

const never = () => new Promise<never>(() => undefined);

/**
 * One Lambda container of the consumer: the real `fifoBatch` middleware and operations, with SDK
 * clients of its own through the fault proxies. It can die at a named step (DESIGN §11): from
 * then on every request it would make, and every effect, waits forever — a dead process does
 * nothing more — and `died` resolves, so the harness stops waiting for its answer.
 */
export class ConsumerContainer {
  readonly handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
  readonly died: Promise<void>;
  readonly #dynamodb: DynamoDBClient;
  readonly #sqs: SQSClient;
  #dead = false;
  #crash: PlannedCrash | undefined;
  #abort: PlannedAbort | undefined;
  #markDead!: () => void;
  #hold: { point: HoldPoint; key?: string; reached: (key: string) => void; go: Promise<void> } | undefined;
  #letGo: () => void = () => undefined;
  readonly #answered = new Set<(request: AnsweredRequest) => void>();

  constructor(options: ContainerOptions) {
    this.died = new Promise((resolve) => (this.#markDead = resolve));
    this.#dynamodb = dynamoDbClientVia(options.dynamodbProxy);
    this.#sqs = sqsClientVia(options.sqsProxy);
    this.#watchRequests(options);
    const store = new DynamoDBIdempotencyStore({
      client: this.#dynamodb,
      tableName: options.idempotencyTable,
      ttlSeconds: options.ttlSeconds,
      now: options.now,
    });
    const operations = (options.operations ?? chaosOperations)({
      ledger: options.ledger,
      effectsTable: options.effectsTable,
      alive: () => (this.#dead ? never() : Promise.resolve()),
      crashesInsideEffect: (key) => this.#crashAt(key, 'inside-effect'),
      atMostOnceApplied: async (key) => this.#abort?.effectApplied(key),
      die: () => this.#die(),
    });
    operations[CHAOS_ABORT_TYPE] = {
      namespace: 'chaos-abort',
      recordIdOf: (message) => `chaos-abort#${message.key}`,
      execute: (message, { signal }) => (this.#abort ?? new PlannedAbort(false)).execute(message.key, signal),
    };
    const consumer = {
      store,
      operations,
      deadLetterQueue: { client: this.#sqs, queueUrl: options.dlqUrl, sourceQueueUrl: options.queueUrl },
      logger: new Logger({ serviceName: 'chaos', logLevel: 'SILENT' }),
      metrics: {
        addMetric: (name: string) => {
          options.metrics?.set(name, (options.metrics.get(name) ?? 0) + 1);
        },
      },
    };
    this.handler = middy<SQSEvent, SQSBatchResponse>().use(
      options.standard ? standardBatch({ ...consumer, ...options.standard }) : fifoBatch(consumer),
    );
  }

  /**
   * Plans a hold for the next invocation: the first record to reach `point` stops there, its key
   * held, until `release`. Resolves with that record's key when it stops.
   */
  planHold(point: HoldPoint): Promise<string> {
    return new Promise((reached) => {
      const go = new Promise<void>((resolve) => (this.#letGo = resolve));
      this.#hold = { point, reached, go };
    });
  }

  /** Lets a held invocation go on; ends the hold plan. */
  release(): void {
    this.#hold = undefined;
    this.#letGo();
  }

  /** Calls `listener` with each DynamoDB request of this container's once it is answered or failed; returns its removal. */
  onAnswered(listener: (request: AnsweredRequest) => void): () => void {
    this.#answered.add(listener);
    return () => this.#answered.delete(listener);
  }

  /** Stops at the planned hold if `request` is at its point: once, for the first record that gets there. */
  async #holdAt(point: HoldPoint, request: ReturnType<typeof classify>): Promise<void> {
    const hold = this.#hold;
    const kinds: readonly RequestKind[] =
      point === 'after-acquire' ? ['acquire', 'transaction'] : ['completion', 'record', 'transaction'];
    const [id] = request?.ids ?? [];
    if (hold?.point !== point || hold.key !== undefined || !request || !id || !kinds.includes(request.kind))
      return;
    if (id.startsWith('chaos-abort#')) return;
    hold.key = keyOf(id);
    hold.reached(hold.key);
    await hold.go;
  }

  /** Plans a crash for the next invocation. */
  planCrash(crash: PlannedCrash | undefined): void {
    this.#crash = crash;
  }

  /** Plans a batch abort for the next invocation, whose batch carries a `CHAOS_ABORT_TYPE` record. */
  planAbort(abort: PlannedAbort | undefined): void {
    this.#abort = abort;
  }

  get dead(): boolean {
    return this.#dead;
  }

  destroy(): void {
    this.#dynamodb.destroy();
    this.#sqs.destroy();
  }

  #crashAt(key: string, point: PlannedCrash['point']): boolean {
    return this.#crash?.point === point && this.#crash.key === key;
  }

  #die(): Promise<never> {
    this.#dead = true;
    this.#markDead();
    return never();
  }

  /**
   * The crash points that sit on DynamoDB requests, seen after marshalling and before the SDK's
   * retries: the acquire (before or after it), the record write after the effect (before or after
   * it), a transaction (before it for both, or right after it applied, "inside the effect"), and
   * the next record's lease (after it was taken ahead, after its start mark).
   */
  #watchRequests({
    unrecordedCompletions,
    startsSent,
    startedNotGivenBack,
    recordsNotKept,
    deadLetterMarksNotWritten,
  }: ContainerOptions): void {
    /** Keys whose lease may have been started by a write this container sent (see `startedNotGivenBack`). */
    const mayHaveStarted = new Set<string>();
    this.#dynamodb.middlewareStack.add(
      (next) => async (args) => {
        if (this.#dead) return never();
        const request = classify(args.input as MarshalledInput);
        const crash = this.#crash;
        const on = (key: string | undefined, id: string | undefined) =>
          key !== undefined && id?.endsWith(`#${key}`) === true;
        const kind = request?.kind;
        const [first, second] = request?.ids ?? [];
        const point = crash && request?.ids.some((id) => on(crash.key, id)) ? crash.point : undefined;
        if (
          (point === 'before-acquire' && (kind === 'acquire' || kind === 'transaction')) ||
          (point === 'before-record' &&
            on(crash?.key, first) &&
            (kind === 'completion' ||
              kind === 'completion-and-start' ||
              kind === 'record' ||
              kind === 'transaction'))
        ) {
          return this.#die();
        }
        const started =
          (kind === 'acquire' && request?.started) || kind === 'start'
            ? first
            : kind === 'completion-and-start'
              ? second
              : undefined;
        if (started) startsSent.add(keyOf(started));
        // A completion sent after its batch failed must start nothing (issue 26, finding 3).
        if (started && !(kind === 'completion-and-start' && this.#abort?.aborted))
          mayHaveStarted.add(keyOf(started));
        let result: Awaited<ReturnType<typeof next>>;
        const answered = (failed: boolean) => {
          if (request) for (const listener of this.#answered) listener({ ...request, failed });
        };
        await this.#holdAt('before-record', request);
        try {
          if (this.#abort?.refuses(first)) throw throttled();
          result = await next(args);
        } catch (error) {
          answered(true);
          // A completion refused by its fence found its lease taken over: that excuses no repeat,
          // since a lease outlives its running invocation unless clocks drift apart beyond its margin.
          if (
            (kind === 'completion' || kind === 'completion-and-start') &&
            !(error instanceof ConditionalCheckFailedException)
          )
            unrecordedCompletions.add(keyOf(first as string));
          if (kind === 'release' && mayHaveStarted.has(keyOf(first as string)))
            startedNotGivenBack.add(keyOf(first as string));
          if (kind === 'keep' && !(error instanceof ConditionalCheckFailedException))
            recordsNotKept.add(keyOf(first as string));
          // The `sent` mark, not the claim before the send: a claim not written sends nothing.
          const item = (args.input as MarshalledInput).Item;
          const written = item?.id?.S;
          if (written?.startsWith(DEAD_LETTER_MARK) && item?.deadLetteredAt)
            deadLetterMarksNotWritten?.add(written.slice(DEAD_LETTER_MARK.length));
          throw error;
        }
        answered(false);
        await this.#holdAt('after-acquire', request);
        if (kind === 'release') startedNotGivenBack.delete(keyOf(first as string));
        if (kind === 'keep') recordsNotKept.delete(keyOf(first as string));
        if (this.#dead) return never();
        const nextKey = crash?.next;
        if (
          (point === 'after-acquire' && kind === 'acquire') ||
          (point === 'inside-effect' && kind === 'transaction') ||
          (point === 'after-completion' &&
            on(crash?.key, first) &&
            (kind === 'completion' || kind === 'completion-and-start')) ||
          (crash?.point === 'after-ahead-acquire' && kind === 'acquire' && on(nextKey, first)) ||
          (crash?.point === 'after-start-mark' &&
            ((kind === 'start' && on(nextKey, first)) ||
              (kind === 'completion-and-start' && on(nextKey, second))))
        ) {
          return this.#die();
        }
        return result;
      },
      { step: 'build', name: 'chaosCrashPoints' },
    );
  }
}

/** The id of a DLQ mark, before its message id. */
const DEAD_LETTER_MARK = deadLetterMarkId('');

interface MarshalledInput {
  Key?: { id?: { S?: string } };
  Item?: {
    id?: { S?: string };
    deadLetteredAt?: { N?: string };
    status?: { S?: string };
    unstarted?: { BOOL?: boolean };
  };
  UpdateExpression?: string;
  ExpressionAttributeValues?: Record<string, { S?: string; M?: { id?: { S?: string } } }>;
  TransactItems?: { Put?: { Item?: { id?: { S?: string } } } }[];
  ConsistentRead?: boolean;
}

type RequestKind =
  | 'acquire'
  | 'start'
  | 'completion'
  | 'completion-and-start'
  | 'record'
  | 'release'
  | 'read'
  | 'keep'
  | 'transaction';

/**
 * Which of the core's requests this is, and the record ids it touches (a completion-and-start: the
 * completed record, then the one whose lease it lets start). `started`: an acquire that takes the lease as started,
 * not ahead of its turn with its effect waiting for a start mark.
 */
function classify(
  input: MarshalledInput,
): { kind: RequestKind; ids: string[]; started?: boolean } | undefined {
  const present = (id: string | undefined): id is string => !!id;
  if (input.TransactItems) {
    const puts = input.TransactItems.map((item) => item.Put?.Item?.id?.S).filter(present);
    return { kind: 'transaction', ids: puts };
  }
  // An acquire that creates its record (the acquire's first write, DESIGN §3).
  if (input.Item?.status?.S === 'IN_PROGRESS' && input.Item.id?.S)
    return { kind: 'acquire', ids: [input.Item.id.S], started: !input.Item.unstarted?.BOOL };
  const id = input.Key?.id?.S;
  const expression = input.UpdateExpression ?? '';
  // The dead-letter log is the story's, not the guarantee's (DESIGN §5): no fault point sits on it.
  if (!id || id.startsWith(deadLetterLogId(''))) return undefined;
  // A read of the record before an unstarted lease decides nothing yet: no crash point sits on it.
  if (input.ConsistentRead) return { kind: 'read', ids: [id] };
  // A DeleteItem gives a lease back unused: no crash point sits on it.
  if (!input.UpdateExpression) return { kind: 'release', ids: [id] };
  if (expression.startsWith('SET #status = :inProgress')) {
    return { kind: 'acquire', ids: [id], started: !expression.includes('unstarted = :true') };
  }
  if (expression.includes('REMOVE unstarted') && !expression.includes('#status'))
    return { kind: 'start', ids: [id] };
  // A record kept alive for a copy going back to SQS (DESIGN §2): no crash point sits on it.
  if (expression === 'SET expiresAt = :until') return { kind: 'keep', ids: [id] };
  if (input.ExpressionAttributeValues?.[':status']?.S === 'COMPLETED') {
    // A completion that lets the next record's lease start names it.
    const next = input.ExpressionAttributeValues[':startedNext']?.M?.id?.S;
    return next ? { kind: 'completion-and-start', ids: [id, next] } : { kind: 'completion', ids: [id] };
  }
  return { kind: 'record', ids: [id] };
}

/** What DynamoDB answers a request it throttles, as the SDK raises it. */
function throttled(): Error {
  return Object.assign(new Error('Rate of requests exceeds the allowed throughput'), {
    name: 'ThrottlingException',
    $metadata: { httpStatusCode: 400 },
  });
}

/** `namespace#key` → key. */
function keyOf(id: string): string {
  return id.slice(id.indexOf('#') + 1);
}

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type {
  SendMessageBatchCommandInput,
  SendMessageBatchCommandOutput,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { RetryPolicy } from '../lambdas/common/backoff.js';
import { itemKey, type OutboxLayout } from '../lambdas/outbox/layout.js';
import { OutboxItems } from '../lambdas/outbox/outbox-items.js';
import type { SenderOptions } from '../lambdas/outbox/relay.js';
import { CLAIM_MARGIN_MS, invocationTimes } from '../lambdas/outbox/sender-environment.js';
import { sqsBatchSender } from '../lambdas/publisher/sqs-batch.js';
import type { ClaimLog } from './outbox-claims.js';
import type { OutboxHalt } from './outbox-schedule.js';
import type { SendLog } from './outbox-sends.js';
import { dynamoDbClientVia, sqsClientVia } from './sdk-clients.js';
import type { TestClock } from './test-clock.js';

/** A relay's or sweeper's timeout; a claim lasts its time left plus the margin, as the handlers size them. */
export const INVOCATION_TIMEOUT_MS = 30_000;
/** Past every claim an invocation makes: a jump "past the lease". */
export const PAST_CLAIM_MS = INVOCATION_TIMEOUT_MS + CLAIM_MARGIN_MS + 5_000;
/** Failed entries are sent again within the invocation, after a few milliseconds, not 50 ms and more. */
const SEND_RETRY: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 4 };
/** Bound on waiting for a halted invocation's requests already on the wire. */
const SETTLE_TIMEOUT_MS = 10_000;

export interface InvocationOptions {
  dynamodbProxy: { endpoint: string };
  sqsProxy: { endpoint: string };
  layout: OutboxLayout;
  queueUrl: string;
  clock: TestClock;
  /** How far its own clock, which its claims and SENT marks read, is off the schedule's (DESIGN §11). */
  skewMs?: number;
  claims: ClaimLog;
  sends: SendLog;
  /** Where it stops: for good (a crash) or until `resume()` (a stall). */
  halt?: OutboxHalt & { as: 'crash' | 'stall' };
}

/** Raised when a halted invocation's requests do not come back within the bound. */
export class InvocationSettleError extends Error {
  override readonly name = 'InvocationSettleError';
}

/**
 * One relay or sweeper invocation: the real `OutboxItems` and SQS batch sender, with SDK clients of
 * its own through the fault proxies, watched by middleware. It logs every claim, and why a message
 * it sent may be sent again: it gives the message back without its SENT mark, or it halts after
 * sending it. It halts at a named point: from then on each request it would make (an SDK retry too)
 * waits — forever after a crash, until `resume()` after a stall — as a dead or frozen process makes
 * no request.
 */
export class OutboxInvocation {
  readonly sender: SenderOptions & { timeLeftMs: () => number };
  /** Resolves when it halts. */
  readonly halted: Promise<void>;
  /** Keys of the messages it started sending, by deduplication id. */
  readonly #sent = new Set<string>();
  /** Keys SQS answered it had accepted. */
  readonly #accepted = new Set<string>();
  /** Keys whose SENT mark came back written. */
  readonly #marked = new Set<string>();
  readonly #dynamodb: DynamoDBClient;
  readonly #sqs: SQSClient;
  readonly #options: InvocationOptions;
  /** The schedule's clock at its timeout: until then it may act on its claims. */
  readonly #liveUntil: number;
  /** How many times it reached its halt point. */
  #reached = 0;
  #isHalted = false;
  #markHalted!: () => void;
  #gate: Promise<void> = Promise.resolve();
  #openGate: () => void = () => undefined;
  #onWire = 0;
  #idle: (() => void)[] = [];

  constructor(options: InvocationOptions) {
    this.#options = options;
    this.halted = new Promise((resolve) => (this.#markHalted = resolve));
    this.#dynamodb = dynamoDbClientVia(options.dynamodbProxy);
    // One attempt per call, as the relay's own client: the ordered sender retries entries itself.
    this.#sqs = sqsClientVia(options.sqsProxy, 1);
    this.#watchDynamoDb();
    this.#watchSqs();
    for (const client of [this.#dynamodb, this.#sqs]) this.#watchWire(client);
    const started = options.clock.now();
    this.#liveUntil = started + INVOCATION_TIMEOUT_MS;
    const skewMs = options.skewMs ?? 0;
    this.sender = {
      items: new OutboxItems({
        client: this.#dynamodb,
        layout: options.layout,
        now: () => options.clock.now() + skewMs,
      }),
      sendBatch: sqsBatchSender(this.#sqs, options.queueUrl),
      maxBatchBytes: 262_144,
      retry: SEND_RETRY,
      // The invocation's deadline follows the schedule's clock, as its claims do: the time left is no
      // clock reading, so its own skew does not move it.
      ...invocationTimes({
        getRemainingTimeInMillis: () => started + INVOCATION_TIMEOUT_MS - options.clock.now(),
      }),
    };
  }

  /** Lets a stalled invocation go on. */
  resume(): void {
    this.#openGate();
  }

  /** Resolves once none of its requests is on the wire: what it sent before halting has landed or not. */
  async settle(): Promise<void> {
    if (this.#onWire === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.#idle.push(resolve)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new InvocationSettleError(`${this.#onWire} requests still on the wire`)),
          SETTLE_TIMEOUT_MS,
        );
      }),
    ]).finally(() => clearTimeout(timer));
  }

  destroy(): void {
    this.#dynamodb.destroy();
    this.#sqs.destroy();
  }

  #arrive(point: OutboxHalt['point']): void {
    const halt = this.#options.halt;
    if (this.#isHalted || halt?.point !== point) return;
    if (++this.#reached !== halt.nth) return;
    this.#isHalted = true;
    // Whatever it sent and did not see marked is someone else's to send again.
    this.#options.sends.explain(
      [...this.#sent].filter((key) => !this.#marked.has(key)),
      halt.as,
    );
    this.#gate = new Promise((resolve) => (this.#openGate = resolve));
    this.#markHalted();
  }

  /** Claims, releases and SENT marks, seen marshalled, around the SDK's retries. */
  #watchDynamoDb(): void {
    const { claims, sends, layout } = this.#options;
    const itemPrefix = String(itemKey(layout, '')[layout.partitionKey]);
    this.#dynamodb.middlewareStack.add(
      (next) => async (args) => {
        await this.#gate;
        const request = classify(args.input as MarshalledInput, layout.partitionKey, itemPrefix);
        const asked = request?.kind === 'claim' ? claims.asking() : 0;
        if (request?.kind === 'release') claims.lettingGo(request.owner, request.key);
        if (request?.kind === 'mark') for (const key of request.keys) claims.lettingGo(request.owner, key);
        if (
          request?.kind === 'release' &&
          this.#accepted.has(request.key) &&
          !this.#marked.has(request.key)
        ) {
          sends.explain([request.key], 'mark-not-written');
        }
        const result = await next(args);
        if (request?.kind === 'claim')
          claims.granted({
            ...request,
            askedAt: asked,
            clockAtGrant: this.#options.clock.now(),
            liveUntil: this.#liveUntil,
          });
        if (request?.kind === 'mark') for (const key of request.keys) this.#marked.add(key);
        if (request?.kind === 'claim') this.#arrive('after-claim');
        if (request?.kind === 'mark') this.#arrive('inside-mark');
        await this.#gate;
        return result;
      },
      { step: 'build', name: 'chaosOutboxRequests' },
    );
  }

  #watchSqs(): void {
    this.#sqs.middlewareStack.add(
      (next, context) => async (args) => {
        await this.#gate;
        if (context.commandName !== 'SendMessageBatchCommand') return next(args);
        const { Entries = [] } = args.input as SendMessageBatchCommandInput;
        for (const entry of Entries) this.#sent.add(String(entry.MessageDeduplicationId));
        const result = await next(args);
        const accepted = new Set(
          (result.output as SendMessageBatchCommandOutput).Successful?.map((entry) => entry.Id),
        );
        for (const entry of Entries)
          if (accepted.has(entry.Id)) this.#accepted.add(String(entry.MessageDeduplicationId));
        this.#arrive('after-send');
        await this.#gate;
        return result;
      },
      { step: 'build', name: 'chaosOutboxSends' },
    );
  }

  /** Each HTTP attempt (inside the SDK's retries): none starts once halted; counts those on the wire. */
  #watchWire(client: DynamoDBClient | SQSClient): void {
    (client as DynamoDBClient).middlewareStack.add(
      (next) => async (args) => {
        await this.#gate;
        this.#onWire++;
        try {
          return await next(args);
        } finally {
          if (--this.#onWire === 0) for (const resolve of this.#idle.splice(0)) resolve();
        }
      },
      { step: 'deserialize', name: 'chaosOutboxWire' },
    );
  }
}

interface MarshalledInput {
  Key?: Record<string, { S?: string }>;
  UpdateExpression?: string;
  ExpressionAttributeValues?: Record<string, { S?: string; N?: string }>;
  TransactItems?: {
    Update?: {
      Key?: Record<string, { S?: string }>;
      ExpressionAttributeValues?: Record<string, { S?: string }>;
    };
  }[];
}

type Classified =
  | { kind: 'claim'; key: string; owner: string; now: number; expiresAt: number }
  | { kind: 'release'; key: string; owner: string }
  /** A run's SENT marks, one transaction: an update per item (a delete of its marker beside each). */
  | { kind: 'mark'; keys: string[]; owner: string };

/** Which of OutboxItems' writes this is (see outbox-items.ts), with the message key and owner. */
function classify(input: MarshalledInput, partitionKey: string, itemPrefix: string): Classified | undefined {
  const keyOf = (key: MarshalledInput['Key']) => String(key?.[partitionKey]?.S).slice(itemPrefix.length);
  const updates = (input.TransactItems ?? []).flatMap((entry) => (entry.Update ? [entry.Update] : []));
  if (updates.length > 0) {
    return {
      kind: 'mark',
      keys: updates.map((update) => keyOf(update.Key)),
      owner: String(updates[0]?.ExpressionAttributeValues?.[':owner']?.S),
    };
  }
  const values = input.ExpressionAttributeValues ?? {};
  const owner = values[':owner']?.S;
  if (!input.UpdateExpression || owner === undefined) return undefined;
  if (input.UpdateExpression.startsWith('SET #owner')) {
    return {
      kind: 'claim',
      key: keyOf(input.Key),
      owner,
      now: Number(values[':now']?.N),
      expiresAt: Number(values[':expires']?.N),
    };
  }
  return input.UpdateExpression.startsWith('REMOVE #owner')
    ? { kind: 'release', key: keyOf(input.Key), owner }
    : undefined;
}

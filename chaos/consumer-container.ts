import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { fifoBatch } from '../src/consumer/index.js';
import { DynamoDBIdempotencyStore } from '../src/idempotency/index.js';
import { chaosOperations } from './chaos-operations.js';
import type { EffectLedger } from './effect-ledger.js';
import type { CrashPoint } from './schedule.js';
import { dynamoDbClientVia, sqsClientVia } from './sdk-clients.js';

/** A crash planned for one invocation: at `point`, on the record whose idempotency id ends in `key`. */
export interface PlannedCrash {
  key: string;
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
  /** Keys whose COMPLETED write failed for good at least once (so at-least-once may re-run them). */
  unrecordedCompletions: Set<string>;
}

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
  #markDead!: () => void;

  constructor(options: ContainerOptions) {
    this.died = new Promise((resolve) => (this.#markDead = resolve));
    this.#dynamodb = dynamoDbClientVia(options.dynamodbProxy);
    this.#sqs = sqsClientVia(options.sqsProxy);
    this.#watchRequests(options.unrecordedCompletions);
    const store = new DynamoDBIdempotencyStore({
      client: this.#dynamodb,
      tableName: options.idempotencyTable,
      ttlSeconds: options.ttlSeconds,
      now: options.now,
    });
    const operations = chaosOperations({
      ledger: options.ledger,
      effectsTable: options.effectsTable,
      alive: () => (this.#dead ? never() : Promise.resolve()),
      crashesInsideEffect: (key) => this.#crashAt(key, 'inside-effect'),
      die: () => this.#die(),
    });
    this.handler = middy<SQSEvent, SQSBatchResponse>().use(
      fifoBatch({
        store,
        operations,
        deadLetterQueue: { client: this.#sqs, queueUrl: options.dlqUrl, sourceQueueUrl: options.queueUrl },
        logger: new Logger({ serviceName: 'chaos', logLevel: 'SILENT' }),
        metrics: { addMetric: () => undefined },
      }),
    );
  }

  /** Plans a crash for the next invocation. */
  planCrash(crash: PlannedCrash | undefined): void {
    this.#crash = crash;
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
   * retries: the acquire (before or after it), the record write after the effect (before it), and
   * a transaction (before it for both, or right after it applied, "inside the effect").
   */
  #watchRequests(unrecordedCompletions: Set<string>): void {
    this.#dynamodb.middlewareStack.add(
      (next) => async (args) => {
        if (this.#dead) return never();
        const request = classify(args.input as MarshalledInput);
        const crash = this.#crash;
        const point =
          request && crash && request.ids.some((id) => id.endsWith(`#${crash.key}`))
            ? crash.point
            : undefined;
        const kind = request?.kind;
        if (
          (point === 'before-acquire' && (kind === 'acquire' || kind === 'transaction')) ||
          (point === 'before-record' &&
            (kind === 'completion' || kind === 'record' || kind === 'transaction'))
        ) {
          return this.#die();
        }
        let result: Awaited<ReturnType<typeof next>>;
        try {
          result = await next(args);
        } catch (error) {
          if (kind === 'completion')
            for (const id of request?.ids ?? []) unrecordedCompletions.add(keyOf(id));
          throw error;
        }
        if (this.#dead) return never();
        if (
          (point === 'after-acquire' && kind === 'acquire') ||
          (point === 'inside-effect' && kind === 'transaction')
        ) {
          return this.#die();
        }
        return result;
      },
      { step: 'build', name: 'chaosCrashPoints' },
    );
  }
}

interface MarshalledInput {
  Key?: { id?: { S?: string } };
  UpdateExpression?: string;
  ExpressionAttributeValues?: Record<string, { S?: string }>;
  TransactItems?: { Put?: { Item?: { id?: { S?: string } } } }[];
}

/** Which of the core's requests this is, and the record ids it touches. */
function classify(
  input: MarshalledInput,
): { kind: 'acquire' | 'completion' | 'record' | 'release' | 'transaction'; ids: string[] } | undefined {
  if (input.TransactItems) {
    const ids = input.TransactItems.map((item) => item.Put?.Item?.id?.S).filter((id): id is string => !!id);
    return { kind: 'transaction', ids };
  }
  const id = input.Key?.id?.S;
  const expression = input.UpdateExpression ?? '';
  if (!id) return undefined;
  // A DeleteItem gives a lease back unused: no crash point sits on it.
  if (!input.UpdateExpression) return { kind: 'release', ids: [id] };
  if (expression.startsWith('SET #status = :inProgress')) return { kind: 'acquire', ids: [id] };
  if (input.ExpressionAttributeValues?.[':status']?.S === 'COMPLETED')
    return { kind: 'completion', ids: [id] };
  return { kind: 'record', ids: [id] };
}

/** `namespace#key` → key. */
function keyOf(id: string): string {
  return id.slice(id.indexOf('#') + 1);
}

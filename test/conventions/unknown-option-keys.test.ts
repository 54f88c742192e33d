import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { publish } from '../../lambdas/client/index.js';
import { type KnownKeys, refuseUnknownKeys, unknownKeyProblems } from '../../lambdas/common/known-keys.js';
import {
  DynamoDBIdempotencyStore,
  fifoBatch,
  leaseOperation,
  OncelyConfigurationError,
  processFifoBatch,
  processStandardBatch,
  standardBatch,
  transactionalOperation,
  ValkeyIdempotencyStore,
} from '../../lambdas/consumer/index.js';
import {
  idempotentRequest,
  LeaseIdempotency,
  TransactionalIdempotency,
} from '../../lambdas/idempotency/index.js';
import { Outbox } from '../../lambdas/outbox/index.js';
import { lambdaContext } from '../support/lambda-context.js';

// Issue 43, item 7: an options object with a misspelt key is refused where it is passed, by every
// entry point that takes one, and the error names the key and the nearest valid one. Each call
// passes the misspelt key through `as never`, as JavaScript or configuration would.

/** Nothing here reaches AWS: every check runs before the first request. */
const dynamodb = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', maxAttempts: 1 });
const store = new DynamoDBIdempotencyStore({ client: dynamodb, tableName: 'idempotency' });
const sqs = {} as SQSClient;
/** A Valkey client that is never called: the options are refused first. */
const valkey = { evalsha: async () => null, eval: async () => null };
const noEvent = { Records: [] };

/** Runs `call`, sync or async, and returns what it threw. */
async function refusal(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
}

const CASES: [entry: string, call: () => unknown, misspelt: string, meant: string][] = [
  ['fifoBatch', () => fifoBatch({ operations: {}, maxAtempts: 3 } as never), 'maxAtempts', 'maxAttempts'],
  ['fifoBatch (the issue’s)', () => fifoBatch({ operatons: {} } as never), 'operatons', 'operations'],
  [
    'processFifoBatch',
    () => processFifoBatch(noEvent, lambdaContext(), { operations: {}, hook: {} } as never),
    'hook',
    'hooks',
  ],
  [
    'standardBatch',
    () => standardBatch({ operations: {}, retryBaseDelay: 5 } as never),
    'retryBaseDelay',
    'retryBaseDelaySeconds',
  ],
  [
    'processStandardBatch',
    () => processStandardBatch(noEvent, lambdaContext(), { operations: {}, inFlightWait: 5 } as never),
    'inFlightWait',
    'inFlightWaitMs',
  ],
  [
    "a consumer's deadLetterQueue",
    () =>
      fifoBatch({
        operations: {},
        deadLetterQueue: { client: sqs, queueUrl: 'https://dlq.fifo', sourceQueueURL: 'https://q.fifo' },
      } as never),
    'sourceQueueURL',
    'sourceQueueUrl',
  ],
  [
    "a consumer's hooks",
    () => standardBatch({ operations: {}, hooks: { onCompleted: () => {} } } as never),
    'onCompleted',
    'onComplete',
  ],
  [
    'leaseOperation',
    () => leaseOperation({ namespace: 'mail', mode: 'at-least-once', run: () => {}, leaseMS: 1 } as never),
    'leaseMS',
    'leaseMs',
  ],
  [
    'transactionalOperation',
    () =>
      transactionalOperation({
        namespace: 'ledger',
        plan: () => ({ writes: [] }),
        contentionRetry: 1,
      } as never),
    'contentionRetry',
    'contentionRetries',
  ],
  [
    'DynamoDBIdempotencyStore',
    () => new DynamoDBIdempotencyStore({ client: dynamodb, tablename: 'idempotency' } as never),
    'tablename',
    'tableName',
  ],
  [
    'ValkeyIdempotencyStore',
    () => new ValkeyIdempotencyStore({ client: valkey, keyPrefx: 'oncely:' } as never),
    'keyPrefx',
    'keyPrefix',
  ],
  [
    "ValkeyIdempotencyStore's waitForReplicas",
    () =>
      new ValkeyIdempotencyStore({
        client: { ...valkey, wait: async () => 1, client: async () => 1 },
        waitForReplicas: { replicas: 1, timeoutMS: 100 },
      } as never),
    'timeoutMS',
    'timeoutMs',
  ],
  [
    'LeaseIdempotency',
    () => new LeaseIdempotency({ store, namespace: 'mail', mode: 'at-most-once', leaseMargin: 1 } as never),
    'leaseMargin',
    'leaseMarginMs',
  ],
  [
    'TransactionalIdempotency',
    () => new TransactionalIdempotency({ store, namespace: 'ledger', cach: false } as never),
    'cach',
    'cache',
  ],
  [
    'idempotentRequest',
    () => idempotentRequest({ store, namespace: 'orders', key: () => 'k', payloads: () => 1 } as never),
    'payloads',
    'payload',
  ],
  [
    'publish',
    () =>
      publish([{ type: 'T', groupId: 'g', payload: {} }], {
        functionName: 'publisher',
        lambda: new LambdaClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', maxAttempts: 1 }),
        retry: { maxAttempts: 1 },
        requestID: 'r-1',
      } as never),
    'requestID',
    'requestId',
  ],
  [
    "publish's retry",
    () =>
      publish([{ type: 'T', groupId: 'g', payload: {} }], {
        functionName: 'publisher',
        lambda: new LambdaClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', maxAttempts: 1 }),
        retry: { maxAttempt: 1 },
      } as never),
    'maxAttempt',
    'maxAttempts',
  ],
  [
    'new Outbox',
    () => new Outbox({ client: dynamodb, tableName: 'outbox', pendingShard: 2 } as never),
    'pendingShard',
    'pendingShards',
  ],
  [
    'Outbox.write',
    () =>
      new Outbox({ client: dynamodb, tableName: 'outbox' }).write({
        messages: [{ type: 'T', groupId: 'g', payload: {} }],
        clientRequestTokn: 't-1',
      } as never),
    'clientRequestTokn',
    'clientRequestToken',
  ],
];

describe('an unknown option key (issue 43, item 7)', () => {
  it.each(CASES)(
    'is refused by %s, naming the key and the nearest valid one',
    async (_, call, misspelt, meant) => {
      const error = await refusal(call);
      expect(error).toBeInstanceOf(OncelyConfigurationError);
      expect((error as OncelyConfigurationError).sources).toEqual([misspelt]);
      expect((error as Error).message).toMatch(
        new RegExp(`\\): unknown option "${misspelt}": did you mean "${meant}"\\?$`),
      );
    },
  );

  it('says so when no valid key is close, and lists the valid ones', async () => {
    const error = await refusal(
      () => new DynamoDBIdempotencyStore({ client: dynamodb, tableName: 't', ttl: 60 } as never),
    );
    expect((error as Error).message).toBe(
      'new DynamoDBIdempotencyStore(): unknown option "ttl" (none is close; the options are client, tableName, ttlSeconds, now)',
    );
  });

  it('accepts a valid key whose value is undefined', async () => {
    expect(() =>
      fifoBatch({ operations: {}, store: undefined, hooks: { onClaim: undefined } }),
    ).not.toThrow();
    expect(
      () => new Outbox({ client: dynamodb, tableName: 'outbox', pendingShards: undefined }),
    ).not.toThrow();
    expect(
      () => new LeaseIdempotency({ store, namespace: 'mail', mode: 'at-least-once', cache: undefined }),
    ).not.toThrow();
  });
});

describe('the check (lambdas/common/known-keys.ts)', () => {
  const KNOWN = { maxAttempts: true, baseDelayMs: true, maxDelayMs: true } satisfies KnownKeys<{
    maxAttempts: number;
    baseDelayMs?: number;
    maxDelayMs?: number;
  }>;

  it('suggests across letter case and swapped letters, each an edit', () => {
    expect(unknownKeyProblems({ MaxAttempts: 1, baseDleayMs: 1 }, KNOWN, 'option')).toEqual([
      'unknown option "MaxAttempts": did you mean "maxAttempts"?',
      'unknown option "baseDleayMs": did you mean "baseDelayMs"?',
    ]);
  });

  it('names every unknown key in one error, and reads only own keys', () => {
    const inherited = Object.create({ colour: 'red' }) as object;
    expect(() => refuseUnknownKeys('f()', inherited, KNOWN)).not.toThrow();
    expect(() => refuseUnknownKeys('f()', { maxAttempt: 1, delay: 1 }, KNOWN)).toThrow(
      new OncelyConfigurationError(
        ['maxAttempt', 'delay'],
        'f(): unknown option "maxAttempt": did you mean "maxAttempts"?; ' +
          'unknown option "delay" (none is close; the options are maxAttempts, baseDelayMs, maxDelayMs)',
      ),
    );
  });

  it('is a list the compiler keeps complete', () => {
    // @ts-expect-error: misses maxDelayMs
    const missing = { maxAttempts: true, baseDelayMs: true } satisfies KnownKeys<{
      maxAttempts: 1;
      baseDelayMs?: 1;
      maxDelayMs?: 1;
    }>;
    // @ts-expect-error: names a key the type lacks
    const extra = { maxAttempts: true, colour: true } satisfies KnownKeys<{ maxAttempts: 1 }>;
    expect([missing, extra]).toHaveLength(2);
  });
});

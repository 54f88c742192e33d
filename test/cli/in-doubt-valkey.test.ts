import { randomUUID } from 'node:crypto';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { Redis } from 'iovalkey';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CliUsageError, parseCommandLine } from '../../cli/command-line.js';
import { listUnresolved, resolveAsCompleted } from '../../cli/in-doubt-records.js';
import { resolveAsRetry } from '../../cli/in-doubt-retry.js';
import { readRecordToResolve } from '../../cli/in-doubt-show.js';
import { stackLeaseRecordsCache } from '../../cli/lease-records-cache.js';
import { readMessageHistory } from '../../cli/message-history.js';
import {
  PipelineUnreachableError,
  RecordNotInDoubtError,
  ResolutionConflictError,
  ValkeyEndpointRequiredError,
} from '../../cli/operations-errors.js';
import { ValkeyOperatorRecords } from '../../cli/valkey-operator-records.js';
import { VALKEY_OPERATOR_SCRIPTS } from '../../cli/valkey-operator-scripts.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import {
  VALKEY_KEY_GRACE_MS,
  ValkeyIdempotencyStore,
  type ValkeyScriptClient,
} from '../../lambdas/idempotency/valkey-store.js';
import { freePort } from '../../sandbox/free-port.js';
import { parkInDoubt } from '../support/lease-stores.js';
import { envelope, inDoubtPipeline, park, TTL_SECONDS } from './in-doubt-support.js';

// `oncely in-doubt` and `oncely history` on a pipeline whose lease records are in Valkey (DESIGN
// §3.1): the operator's scripts (cli/valkey-operator-scripts.ts) on the run's redis-server, on
// records the consumer's own store parked, beside the idempotency table's (DynamoDB Local) and the
// queue of the SQS emulator.

let redis: Redis;
let reader: Redis;
let keyPrefix: string;
let target: Awaited<ReturnType<typeof inDoubtPipeline>> & { valkey: ValkeyOperatorRecords };

beforeAll(async () => {
  const port = inject('valkeyPort');
  redis = new Redis({ host: '127.0.0.1', port });
  reader = new Redis({ host: '127.0.0.1', port });
  keyPrefix = `op-${randomUUID().slice(0, 8)}:`;
  target = { ...(await inDoubtPipeline()), valkey: new ValkeyOperatorRecords(redis, keyPrefix) };
});
afterAll(() => {
  redis?.disconnect();
  reader?.disconnect();
  target?.close();
});

/** The consumer's store on the same records, its clock at `nowMs` when given. */
function consumerStore(now?: () => number): ValkeyIdempotencyStore {
  return new ValkeyIdempotencyStore({
    client: redis,
    keyPrefix,
    ttlSeconds: TTL_SECONDS,
    ...(now && { now }),
  });
}

/** A record the consumer's store parks IN_DOUBT, as at-most-once does when its effect's outcome is unknown. */
async function parkInValkey(key: string, at?: number): Promise<string> {
  const id = `notifications#${key}-${randomUUID().slice(0, 6)}`;
  const store = consumerStore(at === undefined ? undefined : () => at);
  await parkInDoubt(store, id, {
    payloadHash: 'hash',
    error: { name: 'OutcomeUnknownError', message: 'POST /send failed after the request was sent' },
    message: { body: envelope(key, `group-${key}`), groupId: `group-${key}` },
  });
  return id;
}

async function stored(id: string): Promise<IdempotencyRecord | undefined> {
  const raw = await reader.get(`${keyPrefix}${id}`);
  return raw === null ? undefined : (JSON.parse(raw) as IdempotencyRecord);
}

async function indexedAs(id: string): Promise<string[]> {
  const reasons: string[] = [];
  for (const reason of ['IN_DOUBT', 'RETRY_PENDING']) {
    if ((await reader.zscore(`${keyPrefix}unresolved:${reason}`, id)) !== null) reasons.push(reason);
  }
  return reasons;
}

/** The messages of `groupId` on the queue (received: hidden from later counts). */
async function sentTo(groupId: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const { Messages = [] } = await target.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: target.resources.queueUrl,
        MaxNumberOfMessages: 10,
        MessageSystemAttributeNames: ['MessageGroupId'],
      }),
    );
    if (Messages.length === 0) return bodies;
    bodies.push(
      ...Messages.filter((message) => message.Attributes?.MessageGroupId === groupId).map((m) =>
        String(m.Body),
      ),
    );
  }
}

/**
 * A client of the same server that runs `act` before the first call of `script`, or, with
 * `loseAnswer`, lets that call apply and then fails it, as a connection dropped before the reply.
 */
function faulty(
  script: { sha: string },
  fault: { before?: () => Promise<unknown>; loseAnswer?: boolean; downAfter?: boolean },
): ValkeyScriptClient & { readonly fired: boolean } {
  const server = redis as unknown as ValkeyScriptClient;
  let armed = true;
  let down = false;
  const hit = (sha: string) => {
    const now = armed && sha === script.sha;
    if (now) armed = false;
    return now;
  };
  return {
    evalsha: async (sha, ...args) => {
      if (down) throw new Error('Connection is closed.');
      const first = hit(sha);
      if (first && fault.before) await fault.before();
      const answer = await server.evalsha(sha, ...args);
      if (first && fault.downAfter) down = true;
      if (first && (fault.loseAnswer || fault.downAfter)) throw new Error('Connection is closed.');
      return answer;
    },
    eval: (source, ...args) => server.eval(source, ...args),
    get fired() {
      return !armed;
    },
  };
}

const withClient = (client: ValkeyScriptClient) => ({
  ...target,
  valkey: new ValkeyOperatorRecords(client, keyPrefix),
});

describe('oncely in-doubt list on a Valkey pipeline', () => {
  it("pages through the cache's and the table's records together, oldest first, each once", async () => {
    const t = Date.now() - 60_000;
    const cached = await Promise.all([0, 2, 4, 5].map((i) => parkInValkey(`list-v${i}`, t + i * 1000)));
    const tabled = await Promise.all(
      [1, 3].map((i) => park(target, `list-t${i}`, { updatedAt: t + i * 1000 })),
    );
    const expected = [cached[0], tabled[0], cached[1], tabled[1], cached[2], cached[3]];

    const seen: string[] = [];
    let page = await listUnresolved(target, { limit: 4 });
    seen.push(...page.records.map((record) => record.id));
    expect(page.next).toBeDefined();
    page = await listUnresolved(target, { limit: 4, after: page.next });
    seen.push(...page.records.map((record) => record.id));
    expect(page.next).toBeUndefined();
    expect(seen.filter((id) => expected.includes(id))).toEqual(expected);
    const [first] = (await listUnresolved(target, { limit: 1 })).records;
    expect(first).toEqual({
      id: cached[0],
      status: 'IN_DOUBT',
      reason: { name: 'OutcomeUnknownError', message: 'POST /send failed after the request was sent' },
      since: new Date(t).toISOString(),
      attempts: 1,
      groupId: 'group-list-v0',
    });
    for (const id of [...cached, ...tabled]) await resolveAsCompleted(target, id);
  });

  it('pages through records of one updatedAt by id, as the table’s index does', async () => {
    const t = Date.now() - 120_000;
    const ids = await Promise.all(['a', 'b', 'c'].map((key) => parkInValkey(`same-${key}`, t)));
    const seen: string[] = [];
    let after: string | undefined;
    do {
      const page = await listUnresolved(target, { limit: 1, after });
      seen.push(...page.records.map((record) => record.id));
      after = page.next;
    } while (after);
    expect(seen).toEqual([...ids].sort());
    for (const id of ids) await resolveAsCompleted(target, id);
  });
});

describe('oncely in-doubt resolve on a Valkey pipeline', () => {
  it('shows the record in the cache before asking', async () => {
    const id = await parkInValkey('show');
    expect(await readRecordToResolve(target, id)).toMatchObject({
      id,
      status: 'IN_DOUBT',
      attempts: 1,
      error: { name: 'OutcomeUnknownError' },
      message: { groupId: 'group-show', type: 'SendNotification' },
    });
    await resolveAsCompleted(target, id);
  });

  it('--as completed: COMPLETED, off the list, a full TTL and the key’s expiry with it', async () => {
    const id = await parkInValkey('completed');
    const before = Date.now();
    expect(await resolveAsCompleted(target, id)).toEqual({ id, as: 'completed' });

    const record = await stored(id);
    expect(record).toMatchObject({ status: 'COMPLETED' });
    expect(record).not.toHaveProperty('unresolved');
    expect(record).not.toHaveProperty('message');
    expect(record?.history?.at(-1)).toMatchObject({ s: 'COMPLETED', o: 'resolved-completed' });
    const expiresAt = Number(record?.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) + TTL_SECONDS);
    expect(await reader.pexpiretime(`${keyPrefix}${id}`)).toBe(expiresAt * 1000 + VALKEY_KEY_GRACE_MS);
    expect(await indexedAs(id)).toEqual([]);
    // The consumer's store answers a redelivery with it: never run again.
    const again = await consumerStore().acquire({
      id,
      payloadHash: 'hash',
      leaseMs: 1000,
      takeOverExpiredLease: false,
    });
    expect(again).toMatchObject({ acquired: false, existing: { status: 'COMPLETED' } });
    await expect(resolveAsCompleted(target, id)).rejects.toThrow(RecordNotInDoubtError);
  });

  it('--as completed is a conflict when another operator resolved it meanwhile, and changes nothing', async () => {
    const id = await parkInValkey('conflict-operator');
    const racing = withClient(
      faulty(VALKEY_OPERATOR_SCRIPTS.resolveCompleted, { before: () => resolveAsRetry(target, id) }),
    );
    await expect(resolveAsCompleted(racing, id)).rejects.toThrow(
      new ResolutionConflictError(
        `${id} changed while this command resolved it: it is now FAILED (another \`oncely in-doubt resolve\`, or ` +
          'the consumer running a re-sent message, got there first). This command changed nothing; ' +
          '`oncely in-doubt list` shows whether it still needs resolving.',
      ),
    );
    expect(await stored(id)).toMatchObject({ status: 'FAILED' });
    expect(await sentTo('group-conflict-operator')).toHaveLength(1);
  });

  it('--as completed is a conflict when the consumer took a record pending a retry meanwhile', async () => {
    const id = await parkInValkey('conflict-consumer');
    // A retry whose send failed: RETRY_PENDING, FAILED, which the consumer may acquire.
    const failingSend = { ...target, sqs: { send: () => Promise.reject(new Error('injected')) } } as never;
    await expect(resolveAsRetry(failingSend, id)).rejects.toThrow(/Could not send/);
    expect(await indexedAs(id)).toEqual(['RETRY_PENDING']);
    const racing = withClient(
      faulty(VALKEY_OPERATOR_SCRIPTS.resolveCompleted, {
        before: () =>
          consumerStore().acquire({ id, payloadHash: 'hash', leaseMs: 60_000, takeOverExpiredLease: false }),
      }),
    );
    await expect(resolveAsCompleted(racing, id)).rejects.toThrow(/it is now IN_PROGRESS/);
    expect(await stored(id)).toMatchObject({ status: 'IN_PROGRESS' });
    expect(await indexedAs(id)).toEqual([]);
  });

  it('--as retry: RETRY_PENDING while the message is sent, then FAILED and off the list; the consumer runs it', async () => {
    const id = await parkInValkey('retry');
    const during: { record?: IdempotencyRecord; indexed?: string[] } = {};
    const retrying = {
      ...target,
      sqs: {
        send: async (command: never) => {
          during.record = await stored(id);
          during.indexed = await indexedAs(id);
          return target.sqs.send(command);
        },
      },
    } as never;
    const resolution = await resolveAsRetry(retrying, id);
    expect(resolution).toMatchObject({ id, as: 'retry', groupId: 'group-retry', status: 'FAILED' });
    expect(resolution).not.toHaveProperty('notCleared');
    expect(during.record).toMatchObject({ status: 'FAILED', unresolved: 'RETRY_PENDING' });
    expect(during.record).not.toHaveProperty('expiresAt');
    expect(during.indexed).toEqual(['RETRY_PENDING']);

    expect(await sentTo('group-retry')).toEqual([expect.stringContaining('"key":"retry"')]);
    const record = await stored(id);
    expect(record).toMatchObject({ status: 'FAILED' });
    expect(record).not.toHaveProperty('unresolved');
    expect(record).not.toHaveProperty('message');
    expect(record?.history?.slice(-2).map((entry) => entry.o)).toEqual(['resolved-retry', 'retry-sent']);
    expect(await reader.pexpiretime(`${keyPrefix}${id}`)).toBe(
      Number(record?.expiresAt) * 1000 + VALKEY_KEY_GRACE_MS,
    );
    expect(await indexedAs(id)).toEqual([]);
    const taken = await consumerStore().acquire({
      id,
      payloadHash: 'hash',
      leaseMs: 60_000,
      takeOverExpiredLease: false,
    });
    expect(taken.acquired).toBe(true);
  });
});

describe('answers lost on the way back from the cache', () => {
  it('--as completed applied, its answer lost: sent again, it finds its own write and succeeds once', async () => {
    const id = await parkInValkey('lost-completed');
    const client = faulty(VALKEY_OPERATOR_SCRIPTS.resolveCompleted, { loseAnswer: true });
    expect(await resolveAsCompleted(withClient(client), id)).toEqual({ id, as: 'completed' });
    expect(client.fired).toBe(true);
    const record = await stored(id);
    expect(record).toMatchObject({ status: 'COMPLETED' });
    expect(record?.history?.filter((entry) => entry.o === 'resolved-completed')).toHaveLength(1);
  });

  for (const step of ['markRetryPending', 'clearRetryPending'] as const) {
    it(`--as retry with ${step}'s answer lost: one message sent; run again, it is refused and sends none`, async () => {
      const key = `lost-${step}`;
      const id = await parkInValkey(key);
      const client = faulty(VALKEY_OPERATOR_SCRIPTS[step], { loseAnswer: true });
      const resolution = await resolveAsRetry(withClient(client), id);
      expect(client.fired).toBe(true);
      expect(resolution).toMatchObject({ status: 'FAILED' });
      expect(resolution).not.toHaveProperty('notCleared');
      expect(await stored(id)).toMatchObject({ status: 'FAILED' });
      expect(await indexedAs(id)).toEqual([]);
      await expect(resolveAsRetry(target, id)).rejects.toThrow(RecordNotInDoubtError);
      expect(await sentTo(`group-${key}`)).toHaveLength(1);
      const history = (await stored(id))?.history ?? [];
      expect(history.filter((entry) => entry.o !== undefined).map((entry) => entry.o)).toEqual([
        'resolved-retry',
        'retry-sent',
      ]);
    });
  }
});

describe('the cache out of reach', () => {
  it('fails the command saying what to check, with nothing sent or changed', async () => {
    const id = await parkInValkey('down');
    const closed = await freePort();
    const cache = stackLeaseRecordsCache(
      'Oncely-dev',
      { endpoint: { host: 'cache.example', port: 6379 }, name: 'cache', userId: 'user' },
      { host: '127.0.0.1', port: closed },
      target.dynamodb,
    );
    const opened = await cache.open();
    try {
      const down = { ...target, valkey: opened.records };
      await expect(resolveAsRetry(down, id)).rejects.toThrow(PipelineUnreachableError);
      await expect(listUnresolved(down)).rejects.toThrow(
        new RegExp(
          `^Cannot reach the lease records cache cache of stack Oncely-dev at 127\\.0\\.0\\.1:${closed} \\(.*\\)\\. ` +
            'Is the tunnel to cache\\.example:6379 open',
        ),
      );
    } finally {
      opened.close();
    }
    expect(await stored(id)).toMatchObject({ status: 'IN_DOUBT' });
    expect(await indexedAs(id)).toEqual(['IN_DOUBT']);
    expect(await sentTo('group-down')).toEqual([]);
  });

  it('going down once the retry’s mark is written: nothing sent, RETRY_PENDING and listed; run again, sent once', async () => {
    const id = await parkInValkey('down-after-mark');
    const client = faulty(VALKEY_OPERATOR_SCRIPTS.markRetryPending, { downAfter: true });
    await expect(resolveAsRetry(withClient(client), id)).rejects.toThrow('Connection is closed.');
    expect(client.fired).toBe(true);
    expect(await stored(id)).toMatchObject({ status: 'FAILED', unresolved: 'RETRY_PENDING' });
    expect(await indexedAs(id)).toEqual(['RETRY_PENDING']);
    expect(await sentTo('group-down-after-mark')).toEqual([]);
    const [listed] = (await listUnresolved(target)).records.filter((record) => record.id === id);
    expect(listed).toMatchObject({ status: 'RETRY_PENDING', groupId: 'group-down-after-mark' });

    expect(await resolveAsRetry(target, id)).toMatchObject({ status: 'FAILED' });
    expect(await sentTo('group-down-after-mark')).toHaveLength(1);
    expect(await indexedAs(id)).toEqual([]);
  });

  it('on a stack without --valkey-endpoint: a clear error before anything is read', async () => {
    const cache = stackLeaseRecordsCache(
      'Oncely-dev',
      { endpoint: { host: 'cache.example', port: 6379 }, name: 'cache', userId: 'user' },
      undefined,
      target.dynamodb,
    );
    await expect(cache.open()).rejects.toThrow(ValkeyEndpointRequiredError);
    await expect(cache.open()).rejects.toThrow(/give its local end with --valkey-endpoint HOST:PORT/);
  });
});

describe('oncely history of a key whose record is in Valkey', () => {
  it('tells its story from the cache: the park and the operator’s resolution', async () => {
    const id = await parkInValkey('story');
    await resolveAsCompleted(target, id);
    const history = await readMessageHistory(
      { name: 'test', outputs: {}, ...target },
      { key: id.slice(id.indexOf('#') + 1), recordIds: [id] },
    );
    expect(history.records).toEqual([expect.objectContaining({ id, status: 'COMPLETED' })]);
    expect(history.steps.map((step) => step.event)).toEqual(
      expect.arrayContaining(['resolved by an operator: completed']),
    );
    expect(history.steps.some((step) => step.source === 'record' && /doubt/i.test(step.event))).toBe(true);
  });
});

describe('--valkey-endpoint on the command line', () => {
  it('goes with --stack, as HOST:PORT, for in-doubt and history', () => {
    expect(
      parseCommandLine(['in-doubt', 'list', '--stack', 'S', '--valkey-endpoint', 'localhost:6379'], {}),
    ).toMatchObject({
      target: { kind: 'stack', stackName: 'S', valkeyEndpoint: { host: 'localhost', port: 6379 } },
    });
    expect(
      parseCommandLine(['history', 'n#k', '--stack', 'S', '--valkey-endpoint', '[::1]:7000'], {}),
    ).toMatchObject({ target: { valkeyEndpoint: { host: '::1', port: 7000 } } });
    expect(parseCommandLine(['in-doubt', 'list', '--stack', 'S'], {})).toEqual({
      name: 'in-doubt-list',
      target: { kind: 'stack', stackName: 'S' },
      json: false,
      limit: undefined,
      after: undefined,
    });
  });

  it('is refused when it is not HOST:PORT, or with a sandbox, whose ready file says where its cache is', () => {
    for (const value of ['localhost', ':6379', 'localhost:0', 'localhost:port']) {
      expect(() =>
        parseCommandLine(['in-doubt', 'list', '--stack', 'S', '--valkey-endpoint', value], {}),
      ).toThrow(
        new CliUsageError(
          `--valkey-endpoint takes HOST:PORT, where your tunnel to the lease records cache listens (e.g. localhost:6379), got "${value}".`,
        ),
      );
    }
    expect(() =>
      parseCommandLine(
        ['in-doubt', 'list', '--ready-file', 'r.json', '--valkey-endpoint', 'localhost:1'],
        {},
      ),
    ).toThrow(/--valkey-endpoint goes with --stack/);
  });
});

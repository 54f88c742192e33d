import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import { METRICS_SCOPE_ENVIRONMENT } from '../../lambdas/common/metrics-scope.js';
import {
  type IdempotencyRecord,
  UNRESOLVED_INDEX_NAME,
  type UnresolvedReason,
} from '../../lambdas/idempotency/record.js';
import { ValkeyIdempotencyStore } from '../../lambdas/idempotency/valkey-store.js';
import { MONITOR_ENVIRONMENT, readMonitorEnvironment } from '../../lambdas/monitor/environment.js';
import { handler } from '../../lambdas/monitor/handler.js';
import { UNRESOLVED_METRICS } from '../../lambdas/monitor/metrics.js';
import { createMonitorHandler } from '../../lambdas/monitor/monitor.js';
import { provideValkeyCounter, valkeyCounter } from '../../lambdas/monitor/valkey-counter.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { leaseRecords, parkInDoubt } from '../support/lease-stores.js';
import { capturingStdout } from '../support/telemetry.js';

const dynamodb = localDynamoClient();
const documents = DynamoDBDocumentClient.from(dynamodb);
const nowSeconds = () => Math.floor(Date.now() / 1000);

beforeAll(() => {
  // The deployed monitor's configuration: Powertools and the SDK read it from the environment.
  vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'oncely-monitor');
  vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'Oncely');
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  vi.stubEnv('POWERTOOLS_DEV', 'false');
  vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', emulatorEndpoint('dynamodbEndpoint'));
  vi.stubEnv('AWS_REGION', LOCAL_REGION);
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
});
afterAll(() => {
  vi.unstubAllEnvs();
  documents.destroy();
  dynamodb.destroy();
});

async function put(table: string, id: string, fields: Partial<IdempotencyRecord>): Promise<void> {
  const record = { id, status: 'COMPLETED', payloadHash: 'hash', updatedAt: Date.now(), ...fields };
  await documents.send(new PutCommand({ TableName: table, Item: record }));
}

/** A record an operator must resolve, keeping a message as IN_DOUBT records do. */
function unresolved(reason: UnresolvedReason, expiresAt: number, messageBytes = 100) {
  return {
    status: reason === 'IN_DOUBT' ? ('IN_DOUBT' as const) : ('FAILED' as const),
    unresolved: reason,
    expiresAt,
    message: { body: 'x'.repeat(messageBytes), groupId: 'g' },
  };
}

describe('unresolved-records monitor', () => {
  // The deployed entry point, configured from its environment alone (it keeps its client, so once per file).
  it('counts the live IN_DOUBT and RETRY_PENDING records across pages and publishes both as EMF', async () => {
    const table = await createTable(dynamodb, 'monitor');
    const live = nowSeconds() + 3600;
    const expired = nowSeconds() - 60;
    // Six records with 250 KB messages: more than one 1 MB page of the index.
    for (let i = 0; i < 6; i++) await put(table, `in-doubt-${i}`, unresolved('IN_DOUBT', live, 250_000));
    await put(table, 'in-doubt-expired', unresolved('IN_DOUBT', expired));
    await put(table, 'retry-1', unresolved('RETRY_PENDING', live));
    await put(table, 'retry-2', unresolved('RETRY_PENDING', live));
    await put(table, 'retry-expired', unresolved('RETRY_PENDING', expired));
    await put(table, 'completed', { expiresAt: live });
    await put(table, 'failed', { status: 'FAILED', expiresAt: live });
    vi.stubEnv(MONITOR_ENVIRONMENT.idempotencyTableName, table);

    const { result, lines } = await capturingStdout(() => handler());

    expect(result).toEqual({ inDoubt: 6, retryPending: 2 });
    const emf = lines.filter((line) => '_aws' in line);
    expect(emf).toHaveLength(1);
    expect(emf[0]).toMatchObject({
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: 'Oncely',
            Dimensions: [['service']],
            Metrics: expect.arrayContaining([
              { Name: UNRESOLVED_METRICS.inDoubt, Unit: 'Count' },
              { Name: UNRESOLVED_METRICS.retryPending, Unit: 'Count' },
            ]),
          },
        ],
      },
      service: 'oncely-monitor',
      [UNRESOLVED_METRICS.inDoubt]: 6,
      [UNRESOLVED_METRICS.retryPending]: 2,
    });
  });

  it('publishes zeros when nothing is unresolved, so a missing data point means it did not run', async () => {
    const table = await createTable(dynamodb, 'monitor-empty');
    await put(table, 'completed', { expiresAt: nowSeconds() + 3600 });
    const monitor = createMonitorHandler({ dynamodb, idempotencyTableName: table });

    const { result, lines } = await capturingStdout(() => monitor());

    expect(result).toEqual({ inDoubt: 0, retryPending: 0 });
    expect(lines.find((line) => '_aws' in line)).toMatchObject({
      [UNRESOLVED_METRICS.inDoubt]: 0,
      [UNRESOLVED_METRICS.retryPending]: 0,
    });
  });

  it("carries its pipeline's dimension, which the pipeline's alarms select (ONCELY_PIPELINE)", async () => {
    const table = await createTable(dynamodb, 'monitor-scope');
    vi.stubEnv(METRICS_SCOPE_ENVIRONMENT.pipeline, 'Shop-dev/Pipeline');
    const monitor = createMonitorHandler({ dynamodb, idempotencyTableName: table });
    vi.unstubAllEnvs(); // read once, when the monitor is made: what the container started with

    const { lines } = await capturingStdout(() => monitor());

    expect(lines.find((line) => '_aws' in line)).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Dimensions: [['service', 'pipeline']] }] },
      pipeline: 'Shop-dev/Pipeline',
    });
  });

  // Issue 42, item 10: a run read the index twice per reason, a COUNT query and then one for the
  // records to keep from expiring: 4 queries where docs/capacity.md sizes one per reason.
  it('reads the index once per reason, counting the records and keeping from expiring those that would', async () => {
    const table = await createTable(dynamodb, 'monitor-queries');
    const live = nowSeconds() + 3600;
    // Parked by an older version, with an expiry: the monitor removes it.
    await put(table, 'in-doubt-old', unresolved('IN_DOUBT', live));
    const { expiresAt: _none, ...withoutExpiry } = unresolved('RETRY_PENDING', live);
    await put(table, 'retry-new', withoutExpiry);
    const client = localDynamoClient();
    const queries: string[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'QueryCommand')
          queries.push(String((args.input as { IndexName?: string }).IndexName));
        return next(args);
      },
      { step: 'initialize', name: 'countQueries' },
    );
    const monitor = createMonitorHandler({ dynamodb: client, idempotencyTableName: table });

    const { result } = await capturingStdout(() => monitor());

    expect(result).toEqual({ inDoubt: 1, retryPending: 1 });
    expect(queries).toEqual([UNRESOLVED_INDEX_NAME, UNRESOLVED_INDEX_NAME]);
    expect(await readItem(table, 'in-doubt-old')).not.toHaveProperty('expiresAt');
    expect(await readItem(table, 'retry-new')).not.toHaveProperty('expiresAt');
    client.destroy();
  });

  // Issue 42, item 10: the counts went out before the expiries were removed, so a run that then
  // failed looked healthy: no alarm watches the monitor's errors, only its silence.
  it('publishes nothing when it cannot keep a record from expiring, so that its silence raises the alarm', async () => {
    const table = await createTable(dynamodb, 'monitor-fails');
    await put(table, 'in-doubt-old', unresolved('IN_DOUBT', nowSeconds() + 3600));
    const client = localDynamoClient();
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'UpdateItemCommand')
          throw new Error('injected: the table refused the write');
        return next(args);
      },
      { step: 'initialize', name: 'refuseUpdates' },
    );
    const monitor = createMonitorHandler({ dynamodb: client, idempotencyTableName: table });

    const written: string[] = [];
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      await expect(monitor()).rejects.toThrow('injected: the table refused the write');
    } finally {
      stdout.mockRestore();
    }

    expect(written.join('')).not.toContain(UNRESOLVED_METRICS.inDoubt);
    expect(await readItem(table, 'in-doubt-old')).toHaveProperty('expiresAt');
    client.destroy();
  });

  it('names the missing table variable', () => {
    expect(() => readMonitorEnvironment({})).toThrow(OncelyConfigurationError);
    expect(() => readMonitorEnvironment({})).toThrow(
      /^The unresolved-records monitor cannot start: IDEMPOTENCY_TABLE_NAME is not set\. The OncelyPipeline construct/,
    );
  });
});

describe("unresolved-records monitor, with the lease records in Valkey (leaseRecords: 'valkey')", () => {
  const valkey = leaseRecords('Valkey');

  it("counts the cache's unresolved records with the table's, which keeps the transactional ones", async () => {
    const table = await createTable(dynamodb, 'monitor-valkey');
    await put(table, 'ledger#1', unresolved('IN_DOUBT', nowSeconds() + 3600));
    const store = valkey.store();
    if (!(store instanceof ValkeyIdempotencyStore)) throw new Error('not the Valkey store');
    for (const id of ['mail#1', 'mail#2']) await parkInDoubt(store, id);
    const monitor = createMonitorHandler({
      dynamodb,
      idempotencyTableName: table,
      valkey: store,
    });

    const { result, lines } = await capturingStdout(() => monitor());

    expect(result).toEqual({ inDoubt: 3, retryPending: 0 });
    expect(lines.find((line) => '_aws' in line)).toMatchObject({ [UNRESOLVED_METRICS.inDoubt]: 3 });
  });

  it('publishes nothing when the cache cannot be read, so that its silence raises the alarm', async () => {
    const table = await createTable(dynamodb, 'monitor-valkey-down');
    const monitor = createMonitorHandler({
      dynamodb,
      idempotencyTableName: table,
      valkey: { countUnresolved: () => Promise.reject(new Error('injected: the cache did not answer')) },
    });
    const written: string[] = [];
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      await expect(monitor()).rejects.toThrow('injected: the cache did not answer');
    } finally {
      stdout.mockRestore();
    }
    expect(written.join('')).not.toContain(UNRESOLVED_METRICS.inDoubt);
  });

  it("reads the cache's variables, naming the user and the cache when the endpoint is set without them", () => {
    const base = { [MONITOR_ENVIRONMENT.idempotencyTableName]: 'table' };
    expect(readMonitorEnvironment(base)).toEqual({ idempotencyTableName: 'table' });
    expect(() =>
      readMonitorEnvironment({ ...base, [MONITOR_ENVIRONMENT.valkeyEndpoint]: 'cache.example:6379' }),
    ).toThrow(/IDEMPOTENCY_VALKEY_USER_ID is not set.*IDEMPOTENCY_VALKEY_CACHE_NAME is not set/);
    expect(
      readMonitorEnvironment({
        ...base,
        [MONITOR_ENVIRONMENT.valkeyEndpoint]: 'cache.example:6379',
        [MONITOR_ENVIRONMENT.valkeyUserId]: 'oncely-user',
        [MONITOR_ENVIRONMENT.valkeyCacheName]: 'oncely-cache',
      }),
    ).toEqual({
      idempotencyTableName: 'table',
      valkeyEndpoint: { host: 'cache.example', port: 6379 },
      valkeyUserId: 'oncely-user',
      valkeyCacheName: 'oncely-cache',
    });
  });

  it('refuses a cache its bundle has no client for, saying which module provides one', () => {
    const environment = {
      idempotencyTableName: 'table',
      valkeyEndpoint: { host: 'cache.example', port: 6379 },
      valkeyUserId: 'oncely-user',
      valkeyCacheName: 'oncely-cache',
    };
    const previous = provideValkeyCounter(undefined);
    try {
      expect(valkeyCounter({ idempotencyTableName: 'table' }, dynamodb)).toBeUndefined();
      expect(() => valkeyCounter(environment, dynamodb)).toThrow(OncelyConfigurationError);
      expect(() => valkeyCounter(environment, dynamodb)).toThrow(/valkey-default-counter/);
    } finally {
      provideValkeyCounter(previous);
    }
  });
});

import { type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../../harness/fault-proxy.js';
import { MONITOR_ENVIRONMENT } from '../../lambdas/monitor/environment.js';
import type { UnresolvedCounts } from '../../lambdas/monitor/unresolved-counts.js';
import { createTable, localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import {
  bundleHandler,
  bundlesDirectory,
  emulatorEnvironment,
  type ManagedFunction,
  managedFunction,
  removeBundles,
} from './managed-function.js';

// The unresolved-records monitor as the stack bundles it, two runs at once in one environment as on
// Lambda Managed Instances: A's first count is held by a proxy before DynamoDB Local while B runs
// whole. Each publishes the counts it found, in its own EMF document (A's count requests may run
// before or after the records parked meanwhile: the proxy holds only the first request).

let directory: string;
let dynamodb: DynamoDBClient;
let proxy: FaultProxy;
let table: string;
let monitor: ManagedFunction;

beforeAll(async () => {
  directory = await bundlesDirectory();
  dynamodb = localDynamoClient();
  proxy = await startFaultProxy({ service: 'dynamodb', upstream: emulatorEndpoint('dynamodbEndpoint') });
  let codeDirectory: string;
  [codeDirectory, table] = await Promise.all([
    bundleHandler('lambdas/monitor/handler.ts', directory, 'monitor'),
    createTable(dynamodb, 'managed-monitor'),
  ]);
  monitor = managedFunction({
    name: 'managed-monitor',
    codeDirectory,
    environment: {
      ...emulatorEnvironment({ dynamodb: proxy.endpoint, sqs: emulatorEndpoint('sqsEndpoint') }),
      [MONITOR_ENVIRONMENT.idempotencyTableName]: table,
      POWERTOOLS_SERVICE_NAME: 'managed-monitor',
      POWERTOOLS_METRICS_NAMESPACE: 'OncelyManagedTest',
    },
  });
}, 240_000);

afterAll(async () => {
  await monitor?.runtime.stop();
  await proxy?.close();
  dynamodb?.destroy();
  await removeBundles(directory);
});

/** Parks a record IN_DOUBT, as the consumer does (no expiry, the `unresolved` mark). */
async function parkInDoubt(id: string): Promise<void> {
  const item = { id, status: 'IN_DOUBT', payloadHash: 'hash', updatedAt: Date.now(), unresolved: 'IN_DOUBT' };
  await dynamodb.send(new PutItemCommand({ TableName: table, Item: marshall(item) }));
}

async function countsOf(
  invocation: ReturnType<ManagedFunction['runtime']['invoke']>,
): Promise<UnresolvedCounts> {
  const answer = await invocation;
  if (!answer.ok) throw new Error(`${answer.error.errorType}: ${answer.error.errorMessage}`);
  return answer.result as UnresolvedCounts;
}

describe('the unresolved-records monitor, two runs at once in one environment (Lambda Managed Instances)', () => {
  it('publishes each run’s own counts', async () => {
    onTestFailed(() => console.log(monitor.lines.join('\n')));
    // A's first request (its count) hangs until released; B's and A's later ones go on.
    let held = false;
    proxy.setPlan(() => {
      if (held) return undefined;
      held = true;
      return { kind: 'hang' };
    });
    const a = countsOf(monitor.runtime.invoke({}, 'monitor-a'));
    await proxy.waitForHung(1, 10_000);
    await parkInDoubt('first');
    const b = await countsOf(monitor.runtime.invoke({}, 'monitor-b'));
    await parkInDoubt('second');
    proxy.releaseHung();

    const aCounts = await a;

    expect(b).toEqual({ inDoubt: 1, retryPending: 0 });
    expect(monitor.runtime.usage().heapUsedBytes).toHaveLength(1);
    // Each run's EMF document holds the counts that run found: B's first, then A's.
    const emf = (counts: UnresolvedCounts) => ({
      UnresolvedInDoubtRecords: counts.inDoubt,
      UnresolvedRetryPendingRecords: counts.retryPending,
    });
    expect(monitor.metrics().slice(-2)).toEqual([emf(b), emf(aCounts)]);
  });
});

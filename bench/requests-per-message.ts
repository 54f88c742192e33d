import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  DynamoDBIdempotencyStore,
  type IdempotencyMode,
  type IdempotencyObserver,
  LeaseIdempotency,
  TransactionalIdempotency,
} from '../lambdas/idempotency/index.js';
import { ledgerItemId, ledgerWrites } from '../lambdas/shop/consumer/ledger-writes.js';
import { countRequests } from '../sandbox/request-counter.js';
import { type BenchEndpoints, dynamoDbClient } from './clients.js';
import { invocationContext } from './invocation.js';
import { newIdempotencyTable, newLedgerTable, uniqueName } from './resources.js';
import { sumWriteUnits } from './write-units.js';

/** The ways of making one DynamoDB write happen once that (1) compares. */
export const IDEMPOTENCY_SUBJECTS = {
  transactional: 'Oncely transactional mode',
  lease: 'Oncely lease mode, at-least-once',
  leaseAtMostOnce: 'Oncely lease mode, at-most-once',
  powertools: 'Powertools makeIdempotent + the write',
} as const;
export type IdempotencySubject = keyof typeof IDEMPOTENCY_SUBJECTS;

export const DELIVERY_SCENARIOS = {
  first: 'first delivery',
  duplicate: 'duplicate, in another container',
  cachedDuplicate: 'duplicate, in the same container (in-memory cache on)',
  failure: 'failure: the write is refused',
} as const;
export type DeliveryScenario = keyof typeof DELIVERY_SCENARIOS;

export interface RequestsPerMessage {
  subject: IdempotencySubject;
  scenario: DeliveryScenario;
  requests: number;
  /** Requests by DynamoDB operation, e.g. `{ PutItem: 1, UpdateItem: 2 }`. */
  operations: Record<string, number>;
  /** Write units DynamoDB reported for the requests that succeeded (see write-units.ts). */
  writeUnits: number;
}

/** Processes one message in one "container": `cache` says whether that container keeps completed keys in memory. */
type Container = (cache: boolean) => (key: string, quantity: number) => Promise<unknown>;

const STOCK = 1_000;
const SKU = 'bench';

/**
 * (1) DynamoDB requests per message, counted on the client each library is given. The business
 * write is the ledger's `takeStock` (stock never below zero): transactional mode commits it with
 * the idempotency record, lease mode and Powertools send it between their own writes. A refused
 * write (more than the stock) is the failure.
 */
export async function measureRequestsPerMessage(endpoints: BenchEndpoints): Promise<RequestsPerMessage[]> {
  const rows: RequestsPerMessage[] = [];
  for (const subject of Object.keys(IDEMPOTENCY_SUBJECTS) as IdempotencySubject[]) {
    const client = dynamoDbClient(endpoints);
    try {
      rows.push(...(await countScenarios(subject, client)));
    } finally {
      client.destroy();
    }
  }
  return rows;
}

async function countScenarios(
  subject: IdempotencySubject,
  client: DynamoDBClient,
): Promise<RequestsPerMessage[]> {
  const [idempotencyTable, ledgerTable] = await Promise.all([
    newIdempotencyTable(client),
    newLedgerTable(client),
  ]);
  const documents = DynamoDBDocumentClient.from(client);
  await documents.send(
    new PutCommand({ TableName: ledgerTable, Item: { id: ledgerItemId.stock(SKU), available: STOCK } }),
  );
  const container = containers[subject](client, idempotencyTable, ledgerTable);
  const [requests, writeUnits] = [countRequests(client), sumWriteUnits(client)];
  const rows: RequestsPerMessage[] = [];
  const count = async (scenario: DeliveryScenario, deliver: () => Promise<unknown>) => {
    requests.reset();
    writeUnits.reset();
    await deliver();
    rows.push({
      subject,
      scenario,
      requests: requests.total(),
      operations: { ...requests.counts },
      writeUnits: writeUnits.total(),
    });
  };

  const [first, cached, refused] = [uniqueName('first'), uniqueName('cached'), uniqueName('refused')];
  await count('first', () => container(false)(first, 1));
  await count('duplicate', () => container(false)(first, 1));
  const warm = container(true);
  await warm(cached, 1);
  await count('cachedDuplicate', () => warm(cached, 1));
  await count('failure', () =>
    container(false)(refused, STOCK + 1).then(
      () => Promise.reject(new Error(`${subject}: a write beyond the stock was not refused`)),
      () => undefined,
    ),
  );

  // The figures only count if the library kept its promise: two distinct messages, applied once each.
  const { Item } = await documents.send(
    new GetCommand({ TableName: ledgerTable, Key: { id: ledgerItemId.stock(SKU) }, ConsistentRead: true }),
  );
  if (Item?.available !== STOCK - 2) {
    throw new Error(
      `${subject}: expected ${STOCK - 2} in stock after two messages, found ${Item?.available}`,
    );
  }
  return rows;
}

const quietObserver: IdempotencyObserver = {
  completionWriteFailed: () => undefined,
  leaseLost: () => undefined,
  inDoubt: () => undefined,
  failureWriteFailed: () => undefined,
  resultNotStored: () => undefined,
};

const containers: Record<
  IdempotencySubject,
  (client: DynamoDBClient, idempotencyTable: string, ledgerTable: string) => Container
> = {
  transactional: (client, idempotencyTable, ledgerTable) => {
    const store = new DynamoDBIdempotencyStore({ client, tableName: idempotencyTable });
    const takeStock = ledgerWrites(ledgerTable).takeStock;
    return (cache) => {
      const ledger = new TransactionalIdempotency({
        store,
        namespace: 'stock',
        cache: cache ? undefined : false,
      });
      return (key, quantity) =>
        ledger.run({ key, payload: { quantity } }, () => ({ writes: [takeStock(SKU, quantity)] }));
    };
  },
  lease: leaseContainer('at-least-once'),
  leaseAtMostOnce: leaseContainer('at-most-once'),
  powertools: (client, idempotencyTable, ledgerTable) => {
    const takeStock = singleWrite(client, ledgerTable);
    return (cache) => {
      const persistenceStore = new DynamoDBPersistenceLayer({
        tableName: idempotencyTable,
        awsSdkV3Client: client,
      });
      const config = new IdempotencyConfig({
        eventKeyJmesPath: 'key',
        payloadValidationJmesPath: 'payload',
        useLocalCache: cache,
      });
      const process = makeIdempotent(
        async (message: { key: string; payload: { quantity: number } }) => {
          await takeStock(message.payload.quantity);
        },
        { persistenceStore, config },
      );
      return (key, quantity) => {
        config.registerLambdaContext(invocationContext());
        return process({ key, payload: { quantity } });
      };
    };
  },
};

/** Lease mode: the lease, the write on its own, the completion. */
function leaseContainer(
  mode: IdempotencyMode,
): (client: DynamoDBClient, idempotencyTable: string, ledgerTable: string) => Container {
  return (client, idempotencyTable, ledgerTable) => {
    const store = new DynamoDBIdempotencyStore({ client, tableName: idempotencyTable });
    const takeStock = singleWrite(client, ledgerTable);
    return (cache) => {
      const lease = new LeaseIdempotency({
        store,
        namespace: 'stock',
        mode,
        cache: cache ? undefined : false,
        observer: quietObserver,
      });
      return (key, quantity) =>
        lease.run({ key, payload: { quantity }, context: invocationContext() }, () => takeStock(quantity));
    };
  };
}

/** The ledger's takeStock as its own UpdateItem, as a library that cannot join the write sends it. */
function singleWrite(client: DynamoDBClient, ledgerTable: string) {
  const documents = DynamoDBDocumentClient.from(client);
  const { takeStock } = ledgerWrites(ledgerTable);
  return (quantity: number) => {
    const { Update } = takeStock(SKU, quantity);
    if (!Update) throw new Error('takeStock is an update');
    return documents.send(new UpdateCommand(Update));
  };
}

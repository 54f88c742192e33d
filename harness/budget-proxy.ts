import { randomUUID } from 'node:crypto';
import { Agent, createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  BatchGetItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  type AttributeValue as SdkAttributeValue,
} from '@aws-sdk/client-dynamodb';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import type { JsonObject } from './faults.js';
import { forward, readBody } from './http-forward.js';
import {
  type Item,
  type ItemWrite,
  type KeyUnits,
  keyOf,
  type TableSchema,
  updatedImage,
  writeUnits,
} from './write-units.js';

const HOST = '127.0.0.1';
const SECOND_MS = 1_000;

/**
 * How a throttled request is answered. DynamoDB names a hot partition's throttling reason
 * `TableWriteKeyRangeThroughputExceeded` or `IndexWriteKeyRangeThroughputExceeded` (for a GSI, whose
 * back-pressure throttles the write to the table), in a `ProvisionedThroughputExceededException`
 * or a `ThrottlingException` (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-key-range-limit-exceeded-mitigation.html,
 * .../gsi-throttling.html, .../APIReference/API_ThrottlingReason.html). Which of the two a hot key
 * gets on an on-demand table the pages read do not say: `exception` chooses.
 *
 * A `TransactWriteItems` is not answered with either: DynamoDB cancels it, a
 * `TransactionCanceledException` whose reason for the throttled item is `ThrottlingError` ("Throughput
 * exceeds the current capacity…", on an on-demand table or GSI) and `None` for the others
 * (API_TransactWriteItems, the cancellation reason codes). The SDK does not retry a cancellation:
 * `transactions: 'canceled'`, the default, answers as DynamoDB documents; `'exception'` answers the
 * transaction with `exception` instead, which the SDK retries, to tell the two effects apart.
 */
export interface BudgetProxyOptions {
  /** DynamoDB Local's endpoint, or another proxy's in front of it. */
  upstream: string;
  /** Write units per second per partition-key value, of a table and of each GSI. AWS's is 1,000 per partition. */
  unitsPerSecond: number;
  /** Where the proxy reads items' images before a write, and tables' schemas: `upstream` by default. */
  reader?: string;
  /** @default 'ProvisionedThroughputExceededException' */
  exception?: 'ProvisionedThroughputExceededException' | 'ThrottlingException';
  /** @default 'canceled' */
  transactions?: 'canceled' | 'exception';
  /** The clock the buckets refill by. @default Date.now */
  now?: () => number;
}

/** One partition-key value's account, since the proxy started. */
export interface KeyAccount {
  readonly table: string;
  readonly index?: string;
  readonly value: string;
  /** Write units of the requests let through. */
  readonly units: number;
  /** Requests refused because this key was over its budget. */
  readonly throttled: number;
}

export interface BudgetProxyStats {
  /** Write requests let through, and refused. */
  readonly passed: number;
  readonly throttled: number;
  readonly keys: KeyAccount[];
}

export interface BudgetProxy {
  readonly endpoint: string;
  stats(): BudgetProxyStats;
  /** The units let through on one key value: of the table, or of `index`. */
  unitsOn(table: string, value: string, index?: string): number;
  close(): Promise<void>;
}

/** Operations whose items write; everything else goes through uncounted. */
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);

/**
 * An HTTP proxy in front of DynamoDB Local that enforces a write budget per partition-key value,
 * of each table and of each of its global secondary indexes — the limit DynamoDB Local does not
 * have: a partition takes at most 1,000 write units a second, and a key value lives in one
 * partition. Each key value has a bucket of `unitsPerSecond` units, refilled at `unitsPerSecond` a
 * second and never above it. A write touching a key value whose bucket is empty (or in debt) is
 * refused whole, nothing forwarded and nothing counted, with the throttling error DynamoDB sends
 * (see `BudgetProxyOptions`); the others go on whole and take their units from each bucket, which
 * may go into debt by a request larger than what is left (so that a large request, a SENT mark of
 * 10 markers, is not starved by small ones that always fit), and the debt is paid back before the
 * key takes anything more. So over any span a key takes at most its budget a second, plus one
 * second's start and one request's overshoot. The units are counted as DynamoDB bills them
 * (write-units.ts), from each item's image before the write, which the proxy reads first (strongly
 * consistent), and the table's schema (DescribeTable, once).
 *
 * DynamoDB's burst capacity (up to 300 s of unused capacity) and its split for heat are left out,
 * so the budget is a hard ceiling, the worst case the outbox must live with.
 */
export async function startBudgetProxy(options: BudgetProxyOptions): Promise<BudgetProxy> {
  const upstream = new URL(options.upstream);
  const agent = new Agent({ keepAlive: true });
  const reader = new DynamoDBClient(localAwsConfig(options.reader ?? options.upstream));
  const now = options.now ?? Date.now;
  const schemas = new Map<string, Promise<TableSchema>>();
  /** Each key value's units left (negative: owed) as of `at`. */
  const buckets = new Map<string, { left: number; at: number }>();
  const accounts = new Map<
    string,
    { table: string; index?: string; value: string; units: number; throttled: number }
  >();
  let passed = 0;
  let throttled = 0;

  const schemaOf = (table: string): Promise<TableSchema> => {
    let schema = schemas.get(table);
    if (!schema) {
      schema = describe(reader, table);
      schemas.set(table, schema);
      schema.catch(() => schemas.delete(table));
    }
    return schema;
  };

  const accountOf = (units: KeyUnits) => {
    const id = idOf(units.table, units.value, units.index);
    let account = accounts.get(id);
    if (!account) {
      account = { table: units.table, index: units.index, value: units.value, units: 0, throttled: 0 };
      accounts.set(id, account);
    }
    return account;
  };

  /** The units left on `id` at `at` (negative: owed), refilled since its last write. */
  const left = (id: string, at: number): number => {
    const bucket = buckets.get(id);
    if (!bucket) return options.unitsPerSecond;
    const refilled = ((at - bucket.at) / SECOND_MS) * options.unitsPerSecond;
    return Math.min(options.unitsPerSecond, bucket.left + refilled);
  };

  /** The first key value the request would take over budget; else takes its units. Synchronous: no other request interleaves. */
  const admit = (writes: KeyUnits[]): KeyUnits | undefined => {
    const at = now();
    const perKey = new Map<string, { units: KeyUnits; total: number }>();
    for (const units of writes) {
      const id = idOf(units.table, units.value, units.index);
      const entry = perKey.get(id) ?? { units, total: 0 };
      entry.total += units.units;
      perKey.set(id, entry);
    }
    for (const [id, { units }] of perKey) {
      if (left(id, at) <= 0) return units;
    }
    for (const [id, { units, total }] of perKey) {
      buckets.set(id, { left: left(id, at) - total, at });
      accountOf(units).units += total;
    }
    return undefined;
  };

  const handle = async (incoming: IncomingMessage, response: ServerResponse): Promise<void> => {
    const body = await readBody(incoming);
    const operation = operationOf(incoming);
    if (WRITES.has(operation)) {
      const request = parseJson(body);
      const items = await itemWrites(operation, request, schemaOf, reader);
      const over = admit(items.flatMap(writeUnits));
      if (over) {
        throttled += 1;
        accountOf(over).throttled += 1;
        const position = items.findIndex((write) => writeUnits(write).some((units) => sameKey(units, over)));
        return sendJson(response, throttleAnswer(operation, over, position, items.length, options));
      }
      passed += 1;
    }
    const answer = await forward(upstream, agent, incoming, body);
    response.writeHead(answer.status, { ...answer.headers, 'content-length': answer.body.length });
    response.end(answer.body);
  };

  const server = createServer(
    (incoming, response) => void handle(incoming, response).catch(() => response.destroy()),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, HOST, resolve);
  });
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://${HOST}:${port}`,
    stats: () => ({ passed, throttled, keys: [...accounts.values()].map((account) => ({ ...account })) }),
    unitsOn: (table, value, index) => accounts.get(idOf(table, value, index))?.units ?? 0,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      agent.destroy();
      reader.destroy();
    },
  };
}

function idOf(table: string, value: string, index?: string): string {
  return JSON.stringify([table, index ?? null, value]);
}

function sameKey(a: KeyUnits, b: KeyUnits): boolean {
  return a.table === b.table && a.index === b.index && a.value === b.value;
}

async function describe(client: DynamoDBClient, table: string): Promise<TableSchema> {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
  const keyName = (schema: { AttributeName?: string; KeyType?: string }[] | undefined, type: string) =>
    schema?.find((key) => key.KeyType === type)?.AttributeName;
  return {
    name: table,
    arn: Table?.TableArn ?? table,
    partitionKey: keyName(Table?.KeySchema, 'HASH') ?? '',
    sortKey: keyName(Table?.KeySchema, 'RANGE'),
    indexes: (Table?.GlobalSecondaryIndexes ?? []).map((index) => ({
      name: index.IndexName ?? '',
      arn: index.IndexArn ?? `${Table?.TableArn}/index/${index.IndexName}`,
      partitionKey: keyName(index.KeySchema, 'HASH') ?? '',
      sortKey: keyName(index.KeySchema, 'RANGE'),
      projection: index.Projection?.ProjectionType ?? 'ALL',
      include: index.Projection?.NonKeyAttributes ?? [],
    })),
  };
}

interface PlannedWrite {
  table: string;
  kind: 'put' | 'update' | 'delete' | 'check';
  key?: Item;
  item?: Item;
  request: JsonObject;
}

/**
 * Each item a write request writes, with its image before (read now, every item of the request in
 * one BatchGetItem) and after the write, in the request's order; a transaction's `ConditionCheck`
 * as a write that leaves its item as it is (DynamoDB bills it as a write).
 */
async function itemWrites(
  operation: string,
  request: JsonObject,
  schemaOf: (table: string) => Promise<TableSchema>,
  reader: DynamoDBClient,
): Promise<ItemWrite[]> {
  const planned = await Promise.all(
    plan(operation, request).map(async (write) => {
      const schema = await schemaOf(write.table);
      return { write, schema, key: write.key ?? keyOf(schema, write.item ?? {}) };
    }),
  );
  const images = await readImages(
    reader,
    planned.map((entry) => ({ table: entry.write.table, key: entry.key, schema: entry.schema })),
  );
  const transactional = operation === 'TransactWriteItems';
  return planned.map(({ write, schema, key }): ItemWrite => {
    const before = images.get(imageId(write.table, key));
    const after =
      write.kind === 'put'
        ? write.item
        : write.kind === 'update'
          ? updatedImage(before, key, write.request)
          : write.kind === 'check'
            ? before
            : undefined;
    return { schema, key, before, after, transactional };
  });
}

function plan(operation: string, request: JsonObject): PlannedWrite[] {
  const table = String(request.TableName ?? '');
  if (operation === 'PutItem') return [{ table, kind: 'put', item: request.Item as Item, request }];
  if (operation === 'UpdateItem') return [{ table, kind: 'update', key: request.Key as Item, request }];
  if (operation === 'DeleteItem') return [{ table, kind: 'delete', key: request.Key as Item, request }];
  if (operation === 'TransactWriteItems') {
    return ((request.TransactItems ?? []) as JsonObject[]).map((entry): PlannedWrite => {
      const [kind, action] = Object.entries(entry)[0] ?? ['ConditionCheck', {}];
      const inner = action as JsonObject;
      const name = String(inner.TableName ?? '');
      if (kind === 'Put') return { table: name, kind: 'put', item: inner.Item as Item, request: inner };
      if (kind === 'Update') return { table: name, kind: 'update', key: inner.Key as Item, request: inner };
      if (kind === 'Delete') return { table: name, kind: 'delete', key: inner.Key as Item, request: inner };
      return { table: name, kind: 'check', key: inner.Key as Item, request: inner };
    });
  }
  // BatchWriteItem: throttled whole when any of its items is over (DynamoDB would hand back those
  // items as unprocessed instead; the outbox does not use it).
  return Object.entries((request.RequestItems ?? {}) as Record<string, JsonObject[]>).flatMap(
    ([name, entries]) =>
      entries.map((entry): PlannedWrite => {
        const put = entry.PutRequest as JsonObject | undefined;
        const remove = entry.DeleteRequest as JsonObject | undefined;
        return put
          ? { table: name, kind: 'put', item: put.Item as Item, request: put }
          : { table: name, kind: 'delete', key: remove?.Key as Item, request: remove ?? {} };
      }),
  );
}

/**
 * The items at `keys` as they are now, strongly consistent, by `imageId`: one BatchGetItem for a
 * request's items (a transaction has at most 100; DynamoDB Local hands back no unprocessed keys,
 * and any it did would be read again).
 */
async function readImages(
  reader: DynamoDBClient,
  keys: readonly { table: string; key: Item; schema: TableSchema }[],
): Promise<Map<string, Item>> {
  const images = new Map<string, Item>();
  const schemas = new Map(keys.map(({ table, schema }) => [table, schema]));
  let requested: Record<string, { Keys: Record<string, SdkAttributeValue>[]; ConsistentRead: true }> = {};
  const seen = new Set<string>();
  for (const { table, key } of keys) {
    if (seen.has(imageId(table, key))) continue;
    seen.add(imageId(table, key));
    requested[table] ??= { Keys: [], ConsistentRead: true };
    requested[table].Keys.push(key as unknown as Record<string, SdkAttributeValue>);
  }
  while (Object.keys(requested).length > 0) {
    const { Responses = {}, UnprocessedKeys = {} } = await reader.send(
      new BatchGetItemCommand({ RequestItems: requested }),
    );
    for (const [table, items] of Object.entries(Responses)) {
      const schema = schemas.get(table);
      for (const found of items) {
        // The SDK's parsed attribute values, turned back into the protocol's JSON form.
        const item = JSON.parse(JSON.stringify(found, wireValue)) as Item;
        if (schema) images.set(imageId(table, keyOf(schema, item)), item);
      }
    }
    requested = UnprocessedKeys as typeof requested;
  }
  return images;
}

/** One item's identity: its table and its key, attributes in a fixed order. */
function imageId(table: string, key: Item): string {
  return JSON.stringify([
    table,
    ...Object.keys(key)
      .sort()
      .map((name) => [name, key[name]]),
  ]);
}

/** The SDK parses B (and BS's elements) as bytes; the wire form is base64. */
function wireValue(_key: string, value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (value && typeof value === 'object' && (value as { type?: string }).type === 'Buffer') {
    return Buffer.from((value as { data: number[] }).data).toString('base64');
  }
  return value;
}

const ON_DEMAND_TABLE_MESSAGE =
  'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your ' +
  'table or index so please try again shortly. If exceptions persist, check if you have a hot key: ' +
  'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html';
const ON_DEMAND_INDEX_MESSAGE =
  'Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is ' +
  'automatically scaling your index so please try again shortly.';

interface JsonAnswer {
  status: number;
  body: JsonObject;
}

/** DynamoDB's answer to a write refused for `over`, the item at `position` of `count` in the request. */
function throttleAnswer(
  operation: string,
  over: KeyUnits,
  position: number,
  count: number,
  options: BudgetProxyOptions,
): JsonAnswer {
  const reason = `${over.index ? 'Index' : 'Table'}WriteKeyRangeThroughputExceeded`;
  if (operation === 'TransactWriteItems' && (options.transactions ?? 'canceled') === 'canceled') {
    const reasons = Array.from({ length: count }, (_, at) =>
      at === position
        ? { Code: 'ThrottlingError', Message: over.index ? ON_DEMAND_INDEX_MESSAGE : ON_DEMAND_TABLE_MESSAGE }
        : { Code: 'None' },
    );
    return {
      status: 400,
      body: {
        __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
        Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons
          .map((entry) => entry.Code)
          .join(', ')}]`,
        CancellationReasons: reasons,
      },
    };
  }
  const exception = options.exception ?? 'ProvisionedThroughputExceededException';
  // The SDK's model spells the list `ThrottlingReasons` on the one and `throttlingReasons` on the other.
  const reasons = [{ reason, resource: over.arn }];
  return {
    status: 400,
    body:
      exception === 'ThrottlingException'
        ? {
            __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException',
            message: ON_DEMAND_TABLE_MESSAGE,
            throttlingReasons: reasons,
          }
        : {
            __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
            message: ON_DEMAND_TABLE_MESSAGE,
            ThrottlingReasons: reasons,
          },
  };
}

function sendJson(response: ServerResponse, answer: JsonAnswer): void {
  const body = JSON.stringify(answer.body);
  response.writeHead(answer.status, {
    'content-type': 'application/x-amz-json-1.0',
    'x-amzn-requestid': randomUUID(),
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}

function operationOf(incoming: IncomingMessage): string {
  const target = String(incoming.headers['x-amz-target'] ?? '');
  return target.slice(target.indexOf('.') + 1) || 'Unknown';
}

function parseJson(body: Buffer): JsonObject {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
  } catch {
    return {};
  }
}

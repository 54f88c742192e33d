import { type DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';

/** The ledger's stock per SKU and balance per customer, as the consumer left them. */
export async function readLedger(dynamodb: DynamoDBClient, tableName: string) {
  const stock = new Map<string, number>();
  const balances = new Map<string, number>();
  for await (const page of paginateScan(
    { client: dynamodb },
    { TableName: tableName, ConsistentRead: true },
  )) {
    for (const raw of page.Items ?? []) {
      const item = unmarshall(raw) as { id: string; available?: number; balanceCents?: number };
      const [kind, name] = item.id.split('#') as [string, string];
      if (kind === 'stock') stock.set(name, Number(item.available));
      if (kind === 'account') balances.set(name, Number(item.balanceCents));
    }
  }
  return { stock, balances };
}

/** The ids of the idempotency records an operator must look at. */
export async function readInDoubtIds(dynamodb: DynamoDBClient, tableName: string): Promise<string[]> {
  const ids: string[] = [];
  const pages = paginateScan(
    { client: dynamodb },
    {
      TableName: tableName,
      ConsistentRead: true,
      FilterExpression: '#status = :inDoubt',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':inDoubt': { S: 'IN_DOUBT' } },
    },
  );
  for await (const page of pages) for (const item of page.Items ?? []) ids.push(String(item.id?.S));
  return ids;
}

/** Entries where `actual` differs from `expected` (a missing entry counts as 0). */
export function differences(expected: Map<string, number>, actual: Map<string, number>): string[] {
  const names = new Set([...expected.keys(), ...actual.keys()]);
  return [...names]
    .filter((name) => (expected.get(name) ?? 0) !== (actual.get(name) ?? 0))
    .map((name) => `${name}: expected ${expected.get(name) ?? 0}, found ${actual.get(name) ?? 0}`);
}

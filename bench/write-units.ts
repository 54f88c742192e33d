import type { ConsumedCapacity, DynamoDBClient } from '@aws-sdk/client-dynamodb';

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);

/**
 * Adds up the write capacity units DynamoDB reports for a client's successful writes (it asks for
 * them on every request): what on-demand mode bills as write request units. A transaction's item
 * counts twice. A write refused by its condition reports nothing, although AWS bills it too.
 */
export function sumWriteUnits(client: DynamoDBClient) {
  let units = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!WRITES.has(String(context.commandName).replace(/Command$/, ''))) return next(args);
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      const { ConsumedCapacity } = result.output as {
        ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[];
      };
      for (const consumed of [ConsumedCapacity ?? []].flat()) {
        units += consumed.WriteCapacityUnits ?? consumed.CapacityUnits ?? 0;
      }
      return result;
    },
    { step: 'initialize', name: 'benchWriteUnits' },
  );
  return {
    total: () => units,
    reset: () => {
      units = 0;
    },
  };
}

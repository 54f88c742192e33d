import { LEGACY_UNRESOLVED_INDEX_NAME, UNRESOLVED_INDEX_NAME } from './record.js';

/**
 * Runs `query` on the unresolved index; if DynamoDB refuses it there because that index does not
 * exist yet or is backfilling (the update that adds it is under way: CloudFormation creates one
 * index per table update), runs it on the earlier versions' index, which projects everything.
 * @internal
 */
export async function onUnresolvedIndex<T>(query: (indexName: string) => Promise<T>): Promise<T> {
  try {
    return await query(UNRESOLVED_INDEX_NAME);
  } catch (error) {
    if (!isIndexNotReady(error)) throw error;
    return query(LEGACY_UNRESOLVED_INDEX_NAME);
  }
}

/** DynamoDB's answer to a query on an index that is missing ("does not have the specified index") or backfilling. */
function isIndexNotReady(error: unknown): boolean {
  return (
    error instanceof Error &&
    error.name === 'ValidationException' &&
    /specified index|backfilling/i.test(error.message)
  );
}

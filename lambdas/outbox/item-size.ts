/**
 * The size of an item as DynamoDB counts it against its limits
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html),
 * for items in DynamoDBDocumentClient's form (undefined values removed, as the outbox marshals):
 * each attribute's name (UTF-8) plus its value — a string's or binary's bytes, a number's
 * significant digits halved plus one, 1 for a boolean or null, 3 for a list or map plus 1 per
 * element and the elements (a map's keys too), a set's elements. A number counts all its digits
 * but leading zeros, an upper bound where DynamoDB trims trailing ones: a size computed before
 * the write's time is stamped then holds for the stamped item (same digit count).
 */

/** DynamoDB's largest item: 400 KB. */
export const MAX_ITEM_BYTES = 400 * 1024;
/** DynamoDB's largest TransactWriteItems: 4 MB of items in all. */
export const MAX_TRANSACTION_BYTES = 4 * 1024 * 1024;

/** The size of `item` as DynamoDB counts it. */
export function itemBytes(item: Readonly<Record<string, unknown>>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) {
    if (value !== undefined) bytes += utf8Bytes(name) + valueBytes(value);
  }
  return bytes;
}

function valueBytes(value: unknown): number {
  if (typeof value === 'string') return utf8Bytes(value);
  if (typeof value === 'number' || typeof value === 'bigint') return numberBytes(String(value));
  if (typeof value === 'boolean' || value === null) return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Set) return [...value].reduce((sum: number, element) => sum + valueBytes(element), 0);
  if (Array.isArray(value)) {
    return 3 + value.reduce((sum: number, element) => sum + 1 + valueBytes(element ?? null), 0);
  }
  if (typeof value === 'object') {
    const present = Object.entries(value).filter(([, element]) => element !== undefined);
    return 3 + present.reduce((sum, [key, element]) => sum + 1 + utf8Bytes(key) + valueBytes(element), 0);
  }
  return utf8Bytes(String(value));
}

/** A number's significant digits (leading zeros dropped), halved and rounded up, plus one. */
export function numberBytes(text: string): number {
  const digits = text
    .replace(/e.*$/i, '')
    .replace(/[^0-9]/g, '')
    .replace(/^0+/, '');
  return Math.ceil(Math.max(digits.length, 1) / 2) + 1;
}

function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

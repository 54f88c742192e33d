import { numberBytes } from '../lambdas/outbox/item-size.js';
import type { JsonObject } from './faults.js';

/**
 * The write units a DynamoDB write costs, per partition-key value of the table and of each global
 * secondary index it touches, counted from the request and the item's image before it, as DynamoDB
 * bills them (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html,
 * .../GSI.html#GSI.ThroughputConsiderations.Writes, .../transaction-apis.html#transaction-capacity-handling):
 *
 * - **The table.** One unit per 1 KB (1,024 bytes, rounded up, at least 1) of the larger of the
 *   item's images before and after the write: a `PutItem` of a new 300-byte item costs 1, of a
 *   2.5 KB item 3; an `UpdateItem` of a 2.5 KB item costs 3 whatever it changes; a `DeleteItem`
 *   the deleted item's size (1 when there was none); a transaction's `ConditionCheck` the checked
 *   item's size (1 when there is none), as a write. Sizes are counted as DynamoDB counts them:
 *   each attribute's name and value (UTF-8 bytes of a string, a number's significant digits halved
 *   plus one, 1 for a boolean or null, 3 for a list or map plus 1 per element).
 * - **Transactions** (`TransactWriteItems`) bill each item twice (prepare, commit): 2 units per KB.
 * - **A global secondary index** is written only where the write changes its entry: an item is in
 *   the index when it has the index's key attributes (the outbox's index is sparse). A write that
 *   brings an item into the index is one put of its entry; one that takes it out (a `DeleteItem`,
 *   or an update removing the key) one delete of its old entry; one that changes the index's key
 *   a delete and a put (two writes, on the old and the new key values); one that changes only
 *   projected attributes one write; any other none. An entry's size is the table's and the
 *   index's keys plus its projected attributes, 1 unit per KB, at least 1. A transaction's index
 *   writes are counted once, not twice: DynamoDB documents the doubling for the items of the
 *   transaction, and the index is maintained from the committed item (an assumption, the same as
 *   docs/capacity.md's "2 index writes per message").
 *
 * So an outbox message costs, per docs/capacity.md: its pending marker's put in the producer's
 * transaction 2 units on the marker's group partition and 1 on the index's `PENDING` key; its
 * claim 1 unit on its outbox item's partition, none on the index (the outbox item carries no
 * index key); its SENT mark 2 on the item's partition, and the marker's delete 2 on the group
 * partition and 1 on the index key.
 *
 * An `UpdateItem`'s image after the write is worked out from its update expression: `SET a = :v`,
 * `SET a = if_not_exists(a, :v)`, `REMOVE a`, `ADD a :v` on top-level attributes as DynamoDB applies
 * them; any other action (arithmetic, `list_append`, a nested path, `DELETE` from a set) counts the
 * attribute as changed and as large as its old value plus the operand, an upper bound.
 */

/** DynamoDB's attribute-value form, as the AWS JSON protocol carries it. */
export type AttributeValue = Record<string, unknown>;
export type Item = Record<string, AttributeValue>;

/** A table's keys and its global secondary indexes, as DescribeTable tells them. */
export interface TableSchema {
  readonly name: string;
  readonly arn: string;
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly indexes: readonly IndexSchema[];
}

export interface IndexSchema {
  readonly name: string;
  readonly arn: string;
  readonly partitionKey: string;
  readonly sortKey?: string;
  /** `ALL`, `KEYS_ONLY` or `INCLUDE` (with `include`). */
  readonly projection: string;
  readonly include: readonly string[];
}

/** Write units on one partition-key value: of the table (`index` undefined) or of one of its indexes. */
export interface KeyUnits {
  readonly table: string;
  readonly index?: string;
  /** The resource DynamoDB would name in its throttling reason: the table's or the index's ARN. */
  readonly arn: string;
  /** The partition-key value, as a string (its S, N or base64 B). */
  readonly value: string;
  readonly units: number;
}

/**
 * One item written, with its image before the write (undefined: there was none) and after
 * (undefined: deleted). A transaction's `ConditionCheck` is a write of the item as it is (before
 * and after the same): DynamoDB bills it as a write of its size and it changes no index.
 */
export interface ItemWrite {
  readonly schema: TableSchema;
  /** The item's key: what a delete of an absent item (no image at all) is billed on. */
  readonly key: Item;
  readonly before: Item | undefined;
  readonly after: Item | undefined;
  /** Part of a `TransactWriteItems`: the table's units count twice. */
  readonly transactional: boolean;
}

const KB = 1024;

export function unitsOf(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / KB));
}

/** The write units of one item's write, per key value it lands on. */
export function writeUnits(write: ItemWrite): KeyUnits[] {
  const { schema, before, after } = write;
  const keyValue = valueText((after ?? before ?? write.key)[schema.partitionKey]);
  if (keyValue === undefined) return [];
  const tableUnits = unitsOf(Math.max(before ? itemBytes(before) : 0, after ? itemBytes(after) : 0));
  const units: KeyUnits[] = [
    {
      table: schema.name,
      arn: schema.arn,
      value: keyValue,
      units: tableUnits * (write.transactional ? 2 : 1),
    },
  ];
  for (const index of schema.indexes) units.push(...indexUnits(schema, index, before, after));
  return units;
}

function indexUnits(
  schema: TableSchema,
  index: IndexSchema,
  before: Item | undefined,
  after: Item | undefined,
): KeyUnits[] {
  const old = before && inIndex(index, before) ? entryOf(schema, index, before) : undefined;
  const next = after && inIndex(index, after) ? entryOf(schema, index, after) : undefined;
  const on = (entry: Item): KeyUnits => ({
    table: schema.name,
    index: index.name,
    arn: index.arn,
    value: valueText(entry[index.partitionKey]) ?? '',
    units: unitsOf(itemBytes(entry)),
  });
  if (!old && !next) return [];
  if (!old && next) return [on(next)];
  if (old && !next) return [on(old)];
  if (old && next) {
    const sameKey =
      sameValue(old[index.partitionKey], next[index.partitionKey]) &&
      (!index.sortKey || sameValue(old[index.sortKey], next[index.sortKey]));
    if (!sameKey) return [on(old), on(next)];
    return JSON.stringify(sorted(old)) === JSON.stringify(sorted(next)) ? [] : [on(next)];
  }
  return [];
}

function inIndex(index: IndexSchema, item: Item): boolean {
  return item[index.partitionKey] !== undefined && (!index.sortKey || item[index.sortKey] !== undefined);
}

/** What the index keeps of an item: the table's and the index's keys, and the projected attributes. */
function entryOf(schema: TableSchema, index: IndexSchema, item: Item): Item {
  if (index.projection === 'ALL') return item;
  const names = new Set(
    [schema.partitionKey, schema.sortKey, index.partitionKey, index.sortKey, ...index.include].filter(
      (name): name is string => name !== undefined,
    ),
  );
  return Object.fromEntries(Object.entries(item).filter(([name]) => names.has(name)));
}

/** The size of an item as DynamoDB counts it (its attributes' names and values). */
export function itemBytes(item: Item): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) bytes += Buffer.byteLength(name) + valueBytes(value);
  return bytes;
}

function valueBytes(value: AttributeValue): number {
  const [type, content] = Object.entries(value)[0] ?? ['NULL', true];
  switch (type) {
    case 'S':
      return Buffer.byteLength(String(content));
    case 'N':
      return numberBytes(String(content));
    case 'B':
      return Buffer.from(String(content), 'base64').byteLength;
    case 'BOOL':
    case 'NULL':
      return 1;
    case 'SS':
      return (content as string[]).reduce((sum, element) => sum + Buffer.byteLength(element), 0);
    case 'NS':
      return (content as string[]).reduce((sum, element) => sum + numberBytes(element), 0);
    case 'BS':
      return (content as string[]).reduce(
        (sum, element) => sum + Buffer.from(element, 'base64').byteLength,
        0,
      );
    case 'L':
      return 3 + (content as AttributeValue[]).reduce((sum, element) => sum + 1 + valueBytes(element), 0);
    case 'M':
      return (
        3 +
        Object.entries(content as Item).reduce(
          (sum, [key, element]) => sum + 1 + Buffer.byteLength(key) + valueBytes(element),
          0,
        )
      );
    default:
      return Buffer.byteLength(JSON.stringify(content));
  }
}

/** A key attribute's value as text (S, N, or B in base64); undefined when absent. */
export function valueText(value: AttributeValue | undefined): string | undefined {
  if (!value) return undefined;
  const content = value.S ?? value.N ?? value.B;
  return content === undefined ? undefined : String(content);
}

function sameValue(a: AttributeValue | undefined, b: AttributeValue | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function sorted(item: Item): [string, AttributeValue][] {
  return Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The key of an item, for reading its image before a write: the table's key attributes of `item`. */
export function keyOf(schema: TableSchema, item: Item): Item {
  const key: Item = {};
  for (const name of [schema.partitionKey, schema.sortKey]) {
    const value = name ? item[name] : undefined;
    if (name && value) key[name] = value;
  }
  return key;
}

/** An `UpdateItem`'s item after the write, from its image before it (or its key) and its update expression. */
export function updatedImage(before: Item | undefined, key: Item, update: JsonObject): Item {
  const item: Item = { ...(before ?? {}), ...key };
  const expression = typeof update.UpdateExpression === 'string' ? update.UpdateExpression : '';
  const names = (update.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (update.ExpressionAttributeValues ?? {}) as Item;
  const topName = (path: string): { name: string; nested: boolean } => {
    const trimmed = path.trim();
    const first = trimmed.split(/[.[]/)[0] ?? trimmed;
    return { name: names[first] ?? first, nested: first.length < trimmed.length };
  };
  const operandValues = (operand: string): AttributeValue[] =>
    (operand.match(/:[A-Za-z0-9_]+/g) ?? []).flatMap((name) => (values[name] ? [values[name]] : []));
  /** An action this does not apply exactly: the attribute grows by the operands (an upper bound). */
  const grow = (name: string, operands: AttributeValue[]) => {
    const extra = operands.reduce((sum, value) => sum + valueBytes(value), 0);
    const old = item[name];
    item[name] = { S: 'x'.repeat((old ? valueBytes(old) : 0) + extra) };
  };
  for (const [clause, body] of clauses(expression)) {
    for (const action of splitTopLevel(body)) {
      if (clause === 'SET') {
        const at = action.indexOf('=');
        if (at < 0) continue;
        const { name, nested } = topName(action.slice(0, at));
        const operand = action.slice(at + 1).trim();
        const single = /^:[A-Za-z0-9_]+$/.test(operand) ? values[operand] : undefined;
        const ifNotExists = /^if_not_exists\s*\(/i.test(operand) ? operandValues(operand)[0] : undefined;
        if (!nested && single) item[name] = single;
        else if (!nested && ifNotExists) item[name] = item[name] ?? ifNotExists;
        else grow(name, operandValues(operand));
      } else if (clause === 'REMOVE') {
        const { name, nested } = topName(action);
        if (!nested) delete item[name];
      } else if (clause === 'ADD') {
        const [path = '', operand = ''] = action.trim().split(/\s+/);
        const { name } = topName(path);
        const value = values[operand];
        if (!value) continue;
        if (!item[name] || value.N !== undefined) item[name] = item[name] && value.N ? item[name] : value;
        else grow(name, [value]);
      }
      // DELETE removes elements from a set: the item does not grow; counted as it was.
    }
  }
  return item;
}

function clauses(expression: string): [string, string][] {
  const parts = expression.split(/\b(SET|REMOVE|ADD|DELETE)\b/i);
  const found: [string, string][] = [];
  for (let i = 1; i < parts.length; i += 2) found.push([(parts[i] ?? '').toUpperCase(), parts[i + 1] ?? '']);
  return found;
}

/** Splits on commas outside parentheses. */
function splitTopLevel(body: string): string[] {
  const actions: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    const char = body[i];
    if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (char === ',' && depth === 0) {
      actions.push(body.slice(start, i));
      start = i + 1;
    }
  }
  actions.push(body.slice(start));
  return actions.map((action) => action.trim()).filter((action) => action.length > 0);
}

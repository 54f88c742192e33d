import type { ChaosRequest, JsonObject } from './faults.js';

/**
 * A stable identity of what a request does: its operation and the items or messages it targets,
 * so an SDK retry of a request has the same fingerprint as its first try, and the fingerprint does
 * not depend on when the request was sent.
 *
 * - DynamoDB: the keys it targets (`Key`, `Item.id`, each `TransactItems` entry's key, each
 *   `RequestItems` key). Oncely's tables are keyed by `id`. Table names are left out: tests name
 *   tables randomly, and the keys already tell Oncely's items apart.
 * - SQS: the queue's name (not its URL, whose port changes every run) and the deduplication and
 *   group ids of the message or of each batch entry. Receipt handles are left out: every
 *   delivery gets a new one.
 */
export function requestFingerprint(request: Pick<ChaosRequest, 'service' | 'operation' | 'body'>): string {
  const targets = request.service === 'dynamodb' ? dynamoDbTargets(request.body) : sqsTargets(request.body);
  return `${request.service}:${request.operation}:${canonicalJson(targets)}`;
}

function dynamoDbTargets(body: JsonObject): unknown {
  if (body.Key !== undefined) return body.Key;
  if (isObject(body.Item)) return { id: body.Item.id };
  if (Array.isArray(body.TransactItems)) return body.TransactItems.map(transactTarget);
  if (isObject(body.RequestItems)) return Object.values(body.RequestItems).map(batchTargets);
  return { index: body.IndexName ?? null };
}

/** `{ Put: { Item } }`, `{ Update: { Key } }`, `{ Get: { Key } }` … → `[action, key]`. */
function transactTarget(entry: unknown): unknown {
  if (!isObject(entry)) return null;
  return Object.entries(entry).map(([action, request]) => [
    action,
    isObject(request) ? itemKey(request) : null,
  ]);
}

/** BatchWriteItem's `[{ PutRequest } | { DeleteRequest }]` or BatchGetItem's `{ Keys }` of one table. */
function batchTargets(requests: unknown): unknown {
  if (Array.isArray(requests)) return requests.map(transactTarget);
  return isObject(requests) ? (requests.Keys ?? null) : null;
}

function itemKey(request: JsonObject): unknown {
  if (request.Key !== undefined) return request.Key;
  return isObject(request.Item) ? { id: request.Item.id } : null;
}

function sqsTargets(body: JsonObject): unknown {
  const queue = queueName(body.QueueUrl ?? body.QueueName);
  const entries = Array.isArray(body.Entries) ? body.Entries.filter(isObject) : [body];
  return { queue, messages: entries.map(messageIds).filter((ids) => ids.length > 0) };
}

function messageIds(entry: JsonObject): unknown[] {
  return [entry.MessageDeduplicationId, entry.MessageGroupId].filter((id) => id !== undefined);
}

function queueName(urlOrName: unknown): string | null {
  if (typeof urlOrName !== 'string') return null;
  return urlOrName.slice(urlOrName.lastIndexOf('/') + 1);
}

/** JSON with object keys sorted, so equal values give equal text whatever the SDK's key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value)) {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

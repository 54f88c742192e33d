import type { TransactionWrite } from '../idempotency/store.js';
import type { ValidationProblem } from '../publisher/errors.js';
import { OutboxValidationError, OutboxWriteTooLargeError } from './errors.js';
import { itemBytes, MAX_ITEM_BYTES, MAX_TRANSACTION_BYTES } from './item-size.js';
import { OUTBOX_ATTRIBUTES as A, MAX_LAST_ERROR_LENGTH } from './layout.js';

/**
 * What the relay and the sweeper add to an outbox item after its write (outbox-items.ts), each at
 * its largest: a claim (`relay:<uuid>`, a time), the attempts, the last error (500 UTF-16 units:
 * at most 1,500 UTF-8 bytes), the SENT marks (SQS's message id, a time, who, the TTL). An item
 * written without room for them would make every claim of it fail: a message stuck for good.
 */
export const LATER_ATTRIBUTES_BYTES = itemBytes({
  [A.claimOwner]: 'x'.repeat(64),
  [A.claimExpiresAt]: Number.MAX_SAFE_INTEGER,
  [A.attempts]: Number.MAX_SAFE_INTEGER,
  [A.lastError]: 'x'.repeat(3 * MAX_LAST_ERROR_LENGTH),
  [A.messageId]: 'x'.repeat(128),
  [A.sentAt]: Number.MAX_SAFE_INTEGER,
  [A.sentBy]: 'x'.repeat(16),
  [A.expiresAt]: Number.MAX_SAFE_INTEGER,
});

/** The largest outbox item a write may put: DynamoDB's limit, less the room for later attributes. */
export const MAX_OUTBOX_ITEM_BYTES = MAX_ITEM_BYTES - LATER_ATTRIBUTES_BYTES;

/** One message's two items, as the write puts them. */
export interface MessageItems {
  /** The message's position in the write's `messages`. */
  index: number;
  /** The outbox item, with the envelope. */
  item: Record<string, unknown>;
  /** The pending marker. */
  marker: Record<string, unknown>;
}

/**
 * Refuses, before any request, a write DynamoDB could not store: an outbox item over
 * {@link MAX_OUTBOX_ITEM_BYTES} or one of your Puts over 400 KB (OutboxValidationError, naming
 * each), or items over 4 MB in all (OutboxWriteTooLargeError). The total counts the messages'
 * items, your Puts' items and the keys of your other writes: what an Update leaves, DynamoDB
 * alone can tell.
 */
export function checkWriteSize(writes: readonly TransactionWrite[], messages: readonly MessageItems[]): void {
  const problems: ValidationProblem[] = [];
  let total = 0;
  writes.forEach((write, index) => {
    const put = write.Put?.Item;
    const bytes = itemBytes(put ?? keyOf(write));
    total += bytes;
    if (put && bytes > MAX_ITEM_BYTES) {
      problems.push({
        path: `writes[${index}]`,
        message: `its item is ${bytes.toLocaleString('en-US')} bytes, over DynamoDB's ${limit(MAX_ITEM_BYTES, '400 KB')} item limit`,
      });
    }
  });
  for (const { index, item, marker } of messages) {
    const bytes = itemBytes(item);
    total += bytes + itemBytes(marker);
    if (bytes > MAX_OUTBOX_ITEM_BYTES) {
      problems.push({
        index,
        path: `messages[${index}]`,
        message:
          `its outbox item would be ${bytes.toLocaleString('en-US')} bytes, and the relay adds up to ` +
          `${LATER_ATTRIBUTES_BYTES.toLocaleString('en-US')} more, over DynamoDB's ${limit(MAX_ITEM_BYTES, '400 KB')} ` +
          `item limit: its envelope may take at most ${(MAX_OUTBOX_ITEM_BYTES - (bytes - bodyBytes(item))).toLocaleString('en-US')} bytes`,
      });
    }
  }
  if (problems.length > 0) throw new OutboxValidationError(problems);
  if (total > MAX_TRANSACTION_BYTES) {
    throw new OutboxWriteTooLargeError(
      `${writes.length} writes and ${messages.length} messages make ${total.toLocaleString('en-US')} bytes of items, ` +
        `over DynamoDB's limit of ${MAX_TRANSACTION_BYTES.toLocaleString('en-US')} bytes (4 MB) per transaction (each message's outbox item and ` +
        'marker, your Puts, the keys of your other writes); nothing was written: split the write.',
    );
  }
}

function limit(bytes: number, name: string): string {
  return `${bytes.toLocaleString('en-US')}-byte (${name})`;
}

function keyOf(write: TransactionWrite): Record<string, unknown> {
  return write.Update?.Key ?? write.Delete?.Key ?? write.ConditionCheck?.Key ?? {};
}

/** The envelope's share of an outbox item: what the producer can make smaller. */
function bodyBytes(item: Record<string, unknown>): number {
  return Buffer.byteLength(String(item[A.body] ?? ''), 'utf8');
}

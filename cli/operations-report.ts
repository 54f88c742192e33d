/** What the operations commands print, for people; `--json` prints the results themselves instead. */

import { type DeadLetterListing, LISTING_VISIBILITY_TIMEOUT_SECONDS } from './dead-letter-list';
import type { RedriveResult } from './dead-letter-redrive';
import type { InDoubtRecord, Resolution } from './in-doubt-records';
import { formatTable } from './text-table';

export function describeDeadLetters(listing: DeadLetterListing): string {
  const { messages, dlqUrl } = listing;
  if (messages.length === 0) return `The DLQ is empty (${dlqUrl}).`;
  const table = formatTable(
    ['SENT', 'GROUP', 'TYPE', 'KEY', 'RECEIVES', 'MESSAGE ID', 'ORIGINAL ID', 'ERROR'],
    messages.map((message) => [
      message.sentAt ?? '-',
      message.groupId ?? '-',
      message.type ?? '(not an envelope)',
      message.key ?? '-',
      String(message.receiveCount ?? message.approximateReceiveCount ?? '-'),
      message.messageId,
      message.originalMessageId ?? '-',
      message.error
        ? `${message.error.name}: ${message.error.message ?? ''}`
        : 'moved by SQS after maxReceiveCount deliveries (see the consumer logs)',
    ]),
  );
  const notes = [];
  if (listing.approximateCount > messages.length) {
    notes.push(
      `SQS counts about ${listing.approximateCount} messages: a FIFO queue hands out each group from its ` +
        'head only, so later messages of a long group show once the earlier ones are redriven.',
    );
  }
  if (listing.stillHidden > 0) {
    notes.push(
      `${listing.stillHidden} listed messages could not be made visible again; they reappear within ` +
        `${LISTING_VISIBILITY_TIMEOUT_SECONDS} s.`,
    );
  }
  return [`${count(messages.length, 'message')} in the DLQ (${dlqUrl}):`, table, ...notes].join('\n');
}

export function describeRedrive(result: RedriveResult, queueUrl: string): string {
  if (result.status === 'COMPLETED') {
    return (
      `Moved ${count(result.moved, 'message')} from the DLQ back to ${queueUrl}. The consumer runs them again; ` +
      'those that had completed are recognised by their key and not run twice.'
    );
  }
  return (
    `The redrive is still running: ${result.moved} of ${result.toMove ?? '?'} messages moved so far. SQS ` +
    'carries on in the background; `oncely dlq list` shows what is left.'
  );
}

export function describeInDoubt(records: readonly InDoubtRecord[], tableName: string): string {
  if (records.length === 0) return `No records are IN_DOUBT (${tableName}).`;
  const table = formatTable(
    ['ID', 'SINCE', 'ATTEMPTS', 'GROUP', 'REASON'],
    records.map((record) => [
      record.id,
      record.since ?? '-',
      String(record.attempts ?? '-'),
      record.groupId ?? '(no message kept)',
      record.reason ? `${record.reason.name}: ${record.reason.message}` : '-',
    ]),
  );
  return [
    `${count(records.length, 'record')} IN_DOUBT (${tableName}):`,
    table,
    'Find out whether each effect happened, then: `oncely in-doubt resolve ID --as completed` if it did, ' +
      '`--as retry` to run it again.',
  ].join('\n');
}

export function describeResolution(resolution: Resolution, queueUrl: string): string {
  if (resolution.as === 'completed') return `${resolution.id} is now COMPLETED: it is never run again.`;
  return (
    `${resolution.id}: the record is deleted and its message sent again to ${queueUrl} (group ` +
    `${resolution.groupId}, message id ${resolution.messageId}); the consumer runs it as a new message.`
  );
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

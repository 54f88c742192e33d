/** What the operations commands print, for people; `--json` prints the results themselves instead. */

import { DISCARDED_ID_PREFIX, type DiscardResult } from './dead-letter-discard.js';
import { type DeadLetterListing, LISTING_VISIBILITY_TIMEOUT_SECONDS } from './dead-letter-list.js';
import type { RedriveResult, SkipReason } from './dead-letter-redrive.js';
import { describeGroup } from './dead-letter-sweep.js';
import type { Resolution, UnresolvedPage } from './in-doubt-records.js';
import type { OutboxListing } from './outbox-list.js';
import { formatTable } from './text-table.js';

export function describeDeadLetters(listing: DeadLetterListing): string {
  const { messages, dlqUrl } = listing;
  if (messages.length === 0 && listing.end === 'complete') return `The DLQ is empty (${dlqUrl}).`;
  const table = formatTable(
    ['SENT', 'GROUP', 'TYPE', 'KEY', 'RECEIVES', 'MESSAGE ID', 'ORIGINAL ID', 'ERROR', 'BODY'],
    messages.map((message) => [
      message.sentAt ?? '-',
      message.groupId ?? '-',
      message.type ?? '(not an envelope)',
      message.key ?? '-',
      // The consumer's count at dead-lettering: SQS's own counts this command's receives too.
      String(message.receiveCount ?? '-'),
      message.messageId,
      message.originalMessageId ?? '-',
      message.error
        ? `${message.error.name}: ${message.error.message ?? ''}`
        : 'moved by SQS after maxReceiveCount deliveries (see the consumer logs)',
      message.body.replace(/\s+/g, ' '),
    ]),
  );
  const notes = [];
  if (listing.end === 'limit') {
    notes.push(
      `The listing stopped at its limit (--limit); ${count(listing.left, 'more message')} not listed.`,
    );
  }
  if (listing.end === 'blocked' && listing.left > 0) {
    notes.push(
      `${count(listing.left, 'more message')} not listed: a FIFO queue hands out each group from its head only, ` +
        'so later messages of a long group show once the earlier ones are redriven.',
    );
  }
  if (listing.hidden > 0) {
    notes.push(
      `${count(listing.hidden, 'message')} in flight elsewhere (a redrive, another listing) not listed.`,
    );
  }
  if (listing.end === 'timed-out') notes.push('The listing ran out of time before it saw every message.');
  if (listing.end !== 'complete') notes.push('A partial listing (exit code 3).');
  if (listing.stillHidden > 0) {
    notes.push(
      `${listing.stillHidden} listed messages could not be made visible again; they reappear within ` +
        `${LISTING_VISIBILITY_TIMEOUT_SECONDS} s.`,
    );
  }
  return [`${count(messages.length, 'message')} in the DLQ (${dlqUrl}):`, table, ...notes].join('\n');
}

export function describeRedrive(result: RedriveResult, queueUrl: string): string {
  const lines = [
    result.dryRun
      ? `Dry run: would move ${count(result.moved, 'message')} from the DLQ back to ${queueUrl}; moved nothing.`
      : `Moved ${count(result.moved, 'message')} from the DLQ back to ${queueUrl}, each group in order. The consumer ` +
        'runs them again; those that had completed are recognised by their key and not run twice.',
  ];
  const skipped = (reason: SkipReason, why: string) => {
    const these = result.skipped.filter((each) => each.reason === reason);
    if (these.length === 0) return;
    lines.push(
      `Left ${count(these.length, 'message')} ${why}. To run one anyway, publish it again under a new key; then ` +
        '`oncely dlq discard MESSAGE_ID…` deletes it for good, keeping a record:',
      ...these.map(
        (each) =>
          `  ${each.messageId} (${describeGroup(each.groupId)}${each.key ? `, key ${each.key}` : ''})`,
      ),
    );
  };
  skipped(
    'past-dedup-horizon',
    'past the dedup horizon in the DLQ: they can no longer be told apart from new messages; see DESIGN §2',
  );
  skipped(
    'key-lost',
    'without a key in the DLQ: each was keyed by its deduplication id, which SQS replaced when it moved it there, ' +
      'so it would run under a key not its own; see DESIGN §2',
  );
  if (result.returned > 0) {
    lines.push(
      `${count(result.returned, 'moved message')} failed again and came back during the run: left for the next redrive.`,
    );
  }
  if (result.notSelected > 0) {
    lines.push(`Left ${count(result.notSelected, 'message')} not selected (--group, --key, --limit).`);
  }
  if (result.hidden > 0) {
    lines.push(
      `${count(result.hidden, 'message')} in flight elsewhere (another operator's \`dlq list\` or redrive) ` +
        'were not reached: run `oncely dlq redrive` again once it has finished.',
    );
  }
  if (result.left > 0 && result.waitingBehind.length > 0) {
    const them = result.left === 1 ? 'it may wait' : 'they wait';
    const groups = result.waitingBehind.map(describeGroup).join(', ');
    const first = result.waitingBehind[0] as string;
    lines.push(
      `${count(result.left, 'message')} in the DLQ not reached: ${them} behind the first messages of ${groups}, ` +
        `which this redrive does not move (\`oncely dlq redrive --group ${first}\` moves them).`,
    );
  } else if (result.left > 0) {
    const them = result.left === 1 ? 'it waits' : 'they wait';
    lines.push(
      `${count(result.left, 'message')} in the DLQ not reached${result.timedOut ? ' before the time bound' : ''}: ` +
        `${them} behind messages left above (discard those past the horizon), or run \`oncely dlq redrive\` again.`,
    );
  } else if (result.timedOut) {
    lines.push('The time bound ended the redrive first: run `oncely dlq redrive` again for the rest.');
  }
  if (result.stillHidden > 0) {
    lines.push(
      `${count(result.stillHidden, 'message')} left in the DLQ could not be made visible again; they reappear ` +
        'within a minute.',
    );
  }
  lines.push(
    result.finished
      ? 'Finished: the DLQ holds nothing this redrive should move.'
      : 'Not finished: messages it should move are still in the DLQ (exit code 3).',
  );
  return lines.join('\n');
}

export function describeDiscard(result: DiscardResult, tableName: string): string {
  const lines = result.discarded.map(
    (message) =>
      `Discarded ${message.messageId} (${describeGroup(message.groupId)}${message.key ? `, key ${message.key}` : ''}): ` +
      `deleted from the DLQ, recorded as ${message.recordId} in ${tableName}.`,
  );
  for (const id of result.alreadyDiscarded) {
    lines.push(`Already discarded: ${id} (its record is ${DISCARDED_ID_PREFIX}${id}).`);
  }
  if (result.notFound.length > 0 && result.hidden > 0) {
    const them = result.hidden === 1 ? '1 message is' : `${result.hidden} messages are`;
    lines.push(
      `Not found in the DLQ: ${result.notFound.join(', ')}. ${them} in flight elsewhere (a redrive, a listing): it ` +
        'may be one of them. Run `oncely dlq discard` again once they are done (a listing lets go within ' +
        `${LISTING_VISIBILITY_TIMEOUT_SECONDS} s).`,
    );
  } else if (result.notFound.length > 0) {
    lines.push(
      `Not found in the DLQ: ${result.notFound.join(', ')}. Redriven, gone with the DLQ's retention, never there, ` +
        'or behind 10 other messages of its group (exit code 3).',
    );
  }
  return lines.join('\n');
}

/** What the record's state after a retry's send means for the message sent. */
function recordAfterRetry(status: string): string {
  switch (status) {
    case 'FAILED':
    case 'RETRY_PENDING':
      return 'the record is FAILED, so the consumer runs it again.';
    case 'COMPLETED':
      return (
        'the record is now COMPLETED (the consumer ran it, or it was resolved --as completed meanwhile): the ' +
        'consumer takes this copy for a duplicate and does not run it.'
      );
    case 'IN_PROGRESS':
      return 'the consumer is running it already.';
    default:
      return `the record is now ${status}, changed meanwhile: \`oncely in-doubt list\` and \`oncely dlq list\` show where it is.`;
  }
}

/** What is left of a retry that did not finish, and the command that does it. */
const retryPendingNote = (id: string) => `send unconfirmed: oncely in-doubt resolve ${id} --as retry`;

/** Below the list when a retry did not finish: which steps are done, and when only the last is left. */
const RETRY_PENDING_EXPLAINED =
  'A RETRY_PENDING record is one whose --as retry did not finish: step 1 of 3 (mark) is done, step 2 (send the ' +
  'message) is not confirmed. The command shown does steps 2 and 3. If that run said its message is back on the ' +
  'queue, only step 3 (taking the record off the list) is left, and the record leaves the list by itself once ' +
  'the consumer runs the message; running the command anyway sends a copy the consumer takes for a duplicate.';

export function describeUnresolved(page: UnresolvedPage, tableName: string): string {
  const { records, next } = page;
  const more = next === undefined ? [] : [`More follow, newer: \`oncely in-doubt list --after ${next}\``];
  if (records.length === 0) {
    return [
      `No${next === undefined ? '' : ' more'} records are IN_DOUBT or pending a retry (${tableName}).`,
      ...more,
    ].join('\n');
  }
  const table = formatTable(
    ['ID', 'STATUS', 'SINCE', 'ATTEMPTS', 'GROUP', 'REASON', 'EXPIRES'],
    records.map((record) => [
      record.id,
      record.status,
      record.since ?? '-',
      String(record.attempts ?? '-'),
      record.groupId ?? '(no message kept)',
      record.status === 'RETRY_PENDING'
        ? retryPendingNote(record.id)
        : record.reason
          ? `${record.reason.name}: ${record.reason.message}`
          : '-',
      record.expiresAt ?? 'never',
    ]),
  );
  const inDoubt = records.filter((record) => record.status === 'IN_DOUBT').length;
  const expiring = records.filter((record) => record.expiresAt !== undefined).length;
  return [
    `${count(inDoubt, 'record')} IN_DOUBT, ${records.length - inDoubt} pending a retry (${tableName}${next === undefined ? '' : ', the oldest; more follow'}):`,
    table,
    ...(records.length > inDoubt ? [RETRY_PENDING_EXPLAINED] : []),
    ...(expiring > 0
      ? [
          `${count(expiring, 'record')} parked by an older version still expire, with the message they keep, at ` +
            "EXPIRES: the monitor's next run removes that expiry. Resolve them before, or check that the monitor runs.",
        ]
      : []),
    'Find out whether each effect happened, then: `oncely in-doubt resolve ID --as completed` if it did, ' +
      '`--as retry` to run it again.',
    ...more,
  ].join('\n');
}

export function describeResolution(resolution: Resolution, queueUrl: string): string {
  if (resolution.as === 'completed') return `${resolution.id} is now COMPLETED: it is never run again.`;
  const stamped = resolution.republished ? ', stamped now' : '';
  const back =
    `${resolution.id}: its message is back on ${queueUrl}${stamped} (${describeGroup(resolution.groupId)}, message id ` +
    `${resolution.messageId}); `;
  const sent = back + recordAfterRetry(resolution.status);
  if (!resolution.notCleared) return sent;
  return (
    `${sent} Only the last step is left: taking the record off the list, which failed (${resolution.notCleared}). ` +
    'It shows as RETRY_PENDING until the consumer runs the message, then leaves the list by itself: there is no ' +
    `need to resolve it again (\`oncely in-doubt resolve ${resolution.id} --as retry\` would finish it now, sending ` +
    'a copy the consumer takes for a duplicate).'
  );
}

export function describeOutbox(listing: OutboxListing): string {
  const { messages, tableName, olderThanSeconds } = listing;
  const longer = olderThanSeconds === undefined ? '' : ` longer than ${formatAge(olderThanSeconds)}`;
  if (messages.length === 0) return `No outbox message is pending${longer} (${tableName}).`;
  const table = formatTable(
    ['CREATED', 'AGE', 'GROUP', 'TYPE', 'KEY', 'ATTEMPTS', 'CLAIMED BY', 'LAST ERROR'],
    messages.map((message) => [
      message.createdAt,
      formatAge(message.ageSeconds),
      message.groupId,
      message.type ?? '(no outbox item)',
      message.key,
      String(message.attempts),
      message.claim
        ? `${message.claim.owner} ${message.claim.expired ? '(expired)' : `until ${message.claim.expiresAt}`}`
        : '-',
      message.lastError ?? '-',
    ]),
  );
  return [
    `${count(messages.length, 'message')} pending${longer} in the outbox, oldest first (${tableName}):`,
    table,
    ...(listing.truncated ? [`More are pending: these are the oldest ${messages.length}.`] : []),
    'The relay sends each message when it is written, the sweeper what is left once it is older than its sweep ' +
      'bound. One that stays pending fails to send (LAST ERROR, and the relay’s and sweeper’s logs), or waits ' +
      'behind an earlier message of its group.',
  ].join('\n');
}

/** An age for people: `42s`, `5m12s`, `3h04m`, `2d03h`. */
export function formatAge(seconds: number): string {
  const two = (n: number) => String(n).padStart(2, '0');
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${two(seconds % 60)}s`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h${two(Math.floor((seconds % 3600) / 60))}m`;
  return `${Math.floor(seconds / 86_400)}d${two(Math.floor((seconds % 86_400) / 3600))}h`;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

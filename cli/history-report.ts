import type { MessageHistory, OutboxNow, RecordNow, StoryStep } from './history-story.js';
import { formatTable } from './text-table.js';

/** `oncely history` for people: the steps in time order, each record and the outbox item now, what to do next. */
export function describeHistory(history: MessageHistory): string {
  const { key, steps } = history;
  const lines = [`The story of message ${key}:`];
  if (steps.length === 0) lines.push('  Nothing found by its key.');
  else
    lines.push(
      formatTable(['TIME', 'FROM', 'RECORD', 'ATTEMPT', 'LEASE', 'MESSAGE ID', 'WHAT'], steps.map(row)),
    );
  if (!history.spansRead) {
    lines.push(
      "(Spans are not read from a stack: find the trace by the message's key in your tracing backend, docs/tracing.md.)",
    );
  }
  for (const source of history.unread) lines.push(`(Not read: ${source}.)`);
  lines.push('', 'Now:', ...history.records.map((record) => `  ${describeRecord(record)}`));
  if (history.outbox) lines.push(`  outbox: ${describeOutbox(history.outbox)}`);
  lines.push('', 'Next:', ...history.next.map((step) => `  ${step}`));
  return lines.join('\n');
}

function row(step: StoryStep): string[] {
  return [
    step.at,
    step.source,
    step.recordId ?? '-',
    step.attempt === undefined ? '-' : String(step.attempt),
    step.lease ?? '-',
    step.messageId ?? (step.traceId ? `trace ${step.traceId}` : '-'),
    [step.event, step.receiveCount === undefined ? '' : `(receive ${step.receiveCount})`, step.detail ?? '']
      .filter((part) => part !== '')
      .join(' '),
  ];
}

function describeRecord(record: RecordNow): string {
  if (record.status === undefined) return `${record.id}: no record`;
  const parts = [
    record.unresolved === 'RETRY_PENDING' ? 'FAILED, RETRY_PENDING' : record.status,
    `${record.attempts ?? 0} attempt${record.attempts === 1 ? '' : 's'}`,
    ...(record.error ? [`last error ${record.error.name}: ${record.error.message}`] : []),
    ...(record.lease ? [`lease ${record.lease.holder} until ${record.lease.expiresAt}`] : []),
    record.expiresAt ? `expires ${record.expiresAt}` : 'never expires while unresolved',
    ...(record.noHistory ? ['written before records kept a history'] : []),
  ];
  return `${record.id}: ${parts.join(', ')}`;
}

function describeOutbox(outbox: OutboxNow): string {
  const written = `written ${outbox.writtenAt}`;
  if (outbox.status === 'PENDING') {
    return `PENDING, ${written}, ${outbox.attempts ?? 0} failed sends${outbox.lastError ? `, last: ${outbox.lastError}` : ''}`;
  }
  return `SENT, ${written}, sent ${outbox.sentAt ?? '?'} by the ${outbox.sentBy ?? 'relay'} as ${outbox.messageId ?? '?'}`;
}

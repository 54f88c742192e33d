import { describe, expect, it } from 'vitest';
import { CliUsageError, parseCommandLine } from '../../cli/command-line.js';
import { describeHistory } from '../../cli/history-report.js';
import { type HistorySources, tellHistory } from '../../cli/history-story.js';
import type { HistoryEntry, IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import type { CollectedSpan } from '../../sandbox/trace-file.js';

// `oncely history`'s telling (pure): what was read by key, put in time order, and the next step.

const T0 = Date.parse('2026-11-29T10:00:00.000Z');
const at = (seconds: number) => T0 + seconds * 1000;

function record(
  status: IdempotencyRecord['status'],
  history: HistoryEntry[],
  extra: Partial<IdempotencyRecord> = {},
) {
  return {
    id: 'mail#k',
    status,
    payloadHash: 'h',
    history,
    expiresAt: at(3600) / 1000,
    ...extra,
  } as IdempotencyRecord;
}

function tell(sources: Partial<HistorySources>) {
  return tellHistory({ key: 'k', records: [], nowMs: at(60), ...sources });
}

const span = (name: string, startMs: number, attributes: Record<string, unknown>): CollectedSpan => ({
  traceId: 't1',
  spanId: name,
  name,
  kind: 'consumer',
  startMs,
  endMs: startMs + 5,
  attributes,
  links: [],
  status: { code: 'unset' },
});

describe('the story, in time order', () => {
  it('dead-lettered after its attempts, redriven, then applied: each step with its attempt, lease and message', () => {
    const history: HistoryEntry[] = [
      { s: 'IN_PROGRESS', t: at(1), l: 'aaaa0001', m: 'm-1', r: 1, p: new Date(at(0)).toISOString() },
      { s: 'FAILED', t: at(2), a: 1, l: 'aaaa0001', x: 'SmtpError' },
      { s: 'IN_PROGRESS', t: at(3), l: 'aaaa0002', m: 'm-1', r: 2 },
      { s: 'FAILED', t: at(4), a: 2, l: 'aaaa0002', x: 'SmtpError', d: 'm-1' },
      { s: 'IN_PROGRESS', t: at(10), l: 'aaaa0003', m: 'm-2', r: 1 },
      { s: 'COMPLETED', t: at(11), a: 3, l: 'aaaa0003' },
    ];
    const story = tell({
      records: [
        {
          id: 'mail#k',
          record: record('COMPLETED', history, { attempts: 3 }),
          deadLetters: [{ s: 'FAILED', t: at(5), m: 'm-1', x: 'SmtpError' }],
        },
      ],
    });
    expect(story.steps.map((step) => [step.source, step.event])).toEqual([
      ['envelope', 'published'],
      ['record', 'delivered: lease taken'],
      ['record', 'effect failed: to be retried'],
      ['record', 'delivered: lease taken'],
      ['record', 'effect failed: dead-lettered'],
      ['dlq', 'sent to the DLQ'],
      ['record', 'delivered (a redriven copy): lease taken'],
      ['record', 'effect applied'],
    ]);
    expect(story.steps[4]).toMatchObject({
      attempt: 2,
      lease: 'aaaa0002',
      messageId: 'm-1',
      detail: 'SmtpError',
    });
    expect(story.steps[6]).toMatchObject({ messageId: 'm-2', receiveCount: 1, lease: 'aaaa0003' });
    expect(story.next).toEqual([expect.stringMatching(/^mail#k: done/)]);
    expect(describeHistory(story)).toContain('delivered (a redriven copy): lease taken (receive 1)');
  });

  it('a transaction dead-lettered, then its redriven copy committed; the outbox and the spans beside', () => {
    const story = tell({
      records: [
        {
          id: 'ledger#k',
          record: record('COMPLETED', [
            { s: 'COMPLETED', t: at(20), a: 1, m: 'm-2', r: 1, p: new Date(at(1)).toISOString() },
          ]),
          deadLetters: [
            { s: 'FAILED', t: at(3), m: 'm-1', x: 'BusinessRuleViolationError' },
            { s: 'FAILED', t: at(3), m: 'm-1', x: 'BusinessRuleViolationError' },
          ],
        },
      ],
      outbox: {
        status: 'SENT',
        writtenAt: new Date(at(1)).toISOString(),
        writtenAtMs: at(1),
        sentAt: new Date(at(2)).toISOString(),
        sentAtMs: at(2),
        sentBy: 'relay',
        messageId: 'm-1',
      },
      spans: [
        span('process orders', at(2.5), { 'oncely.message.key': 'k', 'oncely.outcome': 'dead-lettered' }),
        span('process orders', at(19), { 'oncely.message.key': 'k', 'oncely.outcome': 'applied' }),
        span('process orders', at(19), { 'oncely.message.key': 'another' }),
        span('send orders', at(1.5), { 'oncely.message.keys': ['x', 'k'] }),
      ],
    });
    expect(story.steps.map((step) => step.event)).toEqual([
      'published',
      'written to the outbox',
      'span send orders',
      'sent to the queue by the relay',
      'span process orders',
      'sent to the DLQ',
      'span process orders',
      'delivered (a redriven copy): effect applied in one transaction',
    ]);
    expect(story.steps[4]?.detail).toBe('dead-lettered');
    expect(story.spansRead).toBe(true);
    expect(story.outbox).toEqual({
      status: 'SENT',
      writtenAt: new Date(at(1)).toISOString(),
      sentAt: new Date(at(2)).toISOString(),
      sentBy: 'relay',
      messageId: 'm-1',
    });
  });

  it("an operator's resolutions, and the copy they sent", () => {
    const story = tell({
      records: [
        {
          id: 'pay#k',
          record: record('COMPLETED', [
            { s: 'IN_PROGRESS', t: at(1), l: 'bbbb0001', m: 'm-1' },
            { s: 'IN_DOUBT', t: at(9), l: 'bbbb0001', x: 'LeaseExpired' },
            { s: 'FAILED', t: at(20), o: 'resolved-retry' },
            { s: 'FAILED', t: at(21), o: 'retry-sent' },
            { s: 'IN_PROGRESS', t: at(22), l: 'bbbb0002', m: 'm-3' },
            { s: 'COMPLETED', t: at(23), a: 2, l: 'bbbb0002' },
          ]),
          deadLetters: [],
        },
      ],
    });
    expect(story.steps.map((step) => step.event)).toEqual([
      'delivered: lease taken',
      'parked in doubt',
      'resolved by an operator: retry',
      'sent back to the queue by the operator',
      'delivered (the re-sent copy): lease taken',
      'effect applied',
    ]);
  });
});

describe('the log lines', () => {
  const STACK = 'BusinessRuleViolationError: no stock\n    at plan (index.mjs:1:1)';

  it("shows the function log's lines about the key, at their own time, by their function, with a logged error's stack", () => {
    const story = tell({
      logs: [
        {
          at: at(9),
          function: 'consumer',
          line: '{}',
          entry: {
            level: 'WARN',
            message: 'sent to the DLQ at once',
            timestamp: new Date(at(2)).toISOString(),
            messageId: 'm-1',
            error: { name: 'BusinessRuleViolationError', message: 'no stock', stack: STACK },
          },
        },
        { at: at(3), function: 'consumer', line: 'plain', entry: {} },
      ],
    });
    expect(story.steps).toEqual([
      {
        at: new Date(at(2)).toISOString(),
        source: 'log',
        event: 'warn: sent to the DLQ at once',
        detail: 'consumer',
        messageId: 'm-1',
        error: { name: 'BusinessRuleViolationError', message: 'no stock', stack: STACK },
      },
      { at: new Date(at(3)).toISOString(), source: 'log', event: 'log: plain', detail: 'consumer' },
    ]);
  });
});

describe('the next step', () => {
  const next = (status: IdempotencyRecord['status'] | undefined, extra: Partial<IdempotencyRecord> = {}) =>
    tell({
      records: [{ id: 'pay#k', record: status ? record(status, [], extra) : undefined, deadLetters: [] }],
    }).next;

  it('says what an operator can run for each state', () => {
    expect(next('IN_DOUBT', { expiresAt: undefined, unresolved: 'IN_DOUBT' })).toEqual([
      expect.stringContaining('`oncely in-doubt resolve pay#k --as completed`'),
    ]);
    expect(next('FAILED', { deadLetteredMessageId: 'm-1' })).toEqual([
      expect.stringContaining('`oncely dlq redrive --key k`'),
    ]);
    expect(next('FAILED', { expiresAt: undefined, unresolved: 'RETRY_PENDING' })).toEqual([
      expect.stringContaining('--as retry` again'),
    ]);
    expect(next('FAILED', { attempts: 2 })).toEqual([expect.stringContaining('failed 2 times')]);
    expect(next('REJECTED', { error: { name: 'Bad', message: 'x' } })).toEqual([
      expect.stringContaining('rejected for good (Bad)'),
    ]);
    expect(next('IN_PROGRESS', { leaseToken: 'cccc0001-x', leaseExpiresAt: at(120) })).toEqual([
      expect.stringContaining(`runs out at ${new Date(at(120)).toISOString()}`),
    ]);
    expect(next(undefined)).toEqual([expect.stringContaining('no record')]);
    // A transactional message dead-lettered: no record, but its log.
    const logged = tell({
      records: [{ id: 'ledger#k', deadLetters: [{ s: 'FAILED', t: at(1), m: 'm-1', x: 'Bad' }] }],
    });
    expect(logged.next).toEqual([expect.stringContaining('`oncely dlq redrive --key k`')]);
  });

  it('takes an expired record for none, and a pending outbox item for waiting', () => {
    expect(next('COMPLETED', { expiresAt: at(30) / 1000 })).toEqual([expect.stringContaining('no record')]);
    const story = tell({
      outbox: {
        status: 'PENDING',
        writtenAt: new Date(at(1)).toISOString(),
        writtenAtMs: at(1),
        attempts: 2,
        lastError: 'throttled',
      },
    });
    expect(story.next).toEqual([
      expect.stringContaining('waits in the outbox (2 failed sends, last: throttled)'),
    ]);
  });
});

describe('oncely history, on the command line', () => {
  const parse = (...words: string[]) => parseCommandLine(['history', ...words, '--ready-file', 'r.json'], {});

  it('takes a key with its namespaces, or a record id', () => {
    expect(parse('order-7', '--namespace', 'ledger', '--namespace', 'mail')).toMatchObject({
      name: 'history',
      key: 'order-7',
      recordIds: ['ledger#order-7', 'mail#order-7'],
    });
    expect(parse('ledger#order-7')).toMatchObject({ key: 'order-7', recordIds: ['ledger#order-7'] });
    // With --namespace, a key may hold "#" itself.
    expect(parse('a#b', '--namespace', 'ledger')).toMatchObject({ key: 'a#b', recordIds: ['ledger#a#b'] });
  });

  it('refuses a key without a namespace, and a namespace no record can have', () => {
    expect(() => parse('order-7')).toThrow(CliUsageError);
    expect(() => parse('order-7')).toThrow(/--namespace NS/);
    expect(() => parse()).toThrow(CliUsageError);
    expect(() => parse('order-7', '--namespace', 'no spaces')).toThrow(/Invalid idempotency namespace/);
  });
});

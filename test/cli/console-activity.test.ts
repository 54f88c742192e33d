import { describe, expect, it } from 'vitest';
import {
  deliveriesInLogLines,
  deliveriesInSpans,
  MESSAGES_LISTED,
  recentMessages,
  unsettledRecordIds,
} from '../../cli/console-activity.js';
import type { CollectedSpan } from '../../sandbox/trace-file.js';

// The console's message list, from a sandbox's spans or a stack's log lines (pure).

const T0 = Date.parse('2026-11-29T10:00:00.000Z');

function span(
  kind: CollectedSpan['kind'],
  startMs: number,
  attributes: Record<string, unknown>,
  extra: Partial<CollectedSpan> = {},
): CollectedSpan {
  return {
    traceId: 't',
    spanId: String(startMs),
    name: 'x',
    kind,
    startMs,
    endMs: startMs + 1,
    attributes,
    links: [],
    status: { code: 'unset' },
    ...extra,
  };
}

const record = (key: string, at: number, outcome: string, more: Record<string, unknown> = {}) =>
  span('consumer', T0 + at, {
    'oncely.message.key': key,
    'oncely.message.type': 'OrderPlaced',
    'oncely.message.group': 'g1',
    'oncely.record.id': `ledger#${key}`,
    'oncely.outcome': outcome,
    ...more,
  });

describe('the message list', () => {
  const spans = [
    record('a', 3, 'duplicate'),
    record('a', 1, 'applied'),
    record('b', 2, 'dead-lettered', { 'oncely.message.group': 'g2' }),
    span('producer', T0 + 4, { 'oncely.message.keys': ['c'] }),
  ];
  const pending = [
    {
      key: 'c',
      groupId: 'g3',
      type: 'OrderPaid',
      createdAt: new Date(T0 + 5).toISOString(),
      ageSeconds: 1,
      attempts: 0,
    },
  ];

  it('shows each key by its latest delivery, with how many there were, and what waits in the outbox; latest first', () => {
    expect(recentMessages(deliveriesInSpans(spans), pending, {})).toEqual({
      truncated: false,
      messages: [
        {
          key: 'c',
          type: 'OrderPaid',
          group: 'g3',
          state: 'pending in the outbox',
          deliveries: 0,
          lastAt: new Date(T0 + 5).toISOString(),
        },
        {
          key: 'a',
          type: 'OrderPlaced',
          group: 'g1',
          recordId: 'ledger#a',
          state: 'duplicate',
          deliveries: 2,
          lastAt: new Date(T0 + 3).toISOString(),
        },
        {
          key: 'b',
          type: 'OrderPlaced',
          group: 'g2',
          recordId: 'ledger#b',
          state: 'dead-lettered',
          deliveries: 1,
          lastAt: new Date(T0 + 2).toISOString(),
        },
      ],
    });
  });

  it('filters by type, group, state and a part of the key', () => {
    const keys = (filter: Parameters<typeof recentMessages>[2]) =>
      recentMessages(deliveriesInSpans(spans), pending, filter).messages.map((m) => m.key);
    expect(keys({ state: 'dead-lettered' })).toEqual(['b']);
    expect(keys({ group: 'g1' })).toEqual(['a']);
    expect(keys({ type: 'OrderPaid' })).toEqual(['c']);
    expect(keys({ key: 'b' })).toEqual(['b']);
    expect(keys({ type: 'OrderPlaced', state: 'applied' })).toEqual([]);
  });

  it(`shows the latest ${MESSAGES_LISTED}, and says there are more`, () => {
    const many = Array.from({ length: MESSAGES_LISTED + 1 }, (_, i) => record(`k${i}`, i, 'applied'));
    const list = recentMessages(deliveriesInSpans(many), [], {});
    expect(list.truncated).toBe(true);
    expect(list.messages).toHaveLength(MESSAGES_LISTED);
    expect(list.messages[0]?.key).toBe(`k${MESSAGES_LISTED}`);
  });
});

describe('the message list on a stack, from the consumer’s log lines', () => {
  /** A line as Powertools' Logger writes the consumer's, after the record's verdict. */
  const line = (
    at: number,
    key: string,
    outcome: string | undefined,
    more: Record<string, unknown> = {},
  ) => ({
    at: T0 + at,
    entry: {
      level: 'INFO',
      message: 'processed',
      messageKey: key,
      messageType: 'OrderPlaced',
      groupId: 'g1',
      recordId: `ledger#${key}`,
      ...(outcome === undefined ? {} : { outcome }),
      ...more,
    },
  });

  it('counts each verdict line as a delivery, and ignores the lines that tell none', () => {
    const lines = [
      line(1, 'a', 'given-back', { level: 'WARN', message: 'the record failed and SQS redelivers it' }),
      line(2, 'a', undefined, { message: 'waited for the key another invocation held' }),
      line(3, 'a', 'applied'),
      line(4, 'b', 'dead-lettered', { groupId: 'g2' }),
      { at: T0 + 5, entry: { level: 'ERROR', message: 'the whole batch failed' } },
    ];
    expect(recentMessages(deliveriesInLogLines(lines), [], {}).messages).toEqual([
      {
        key: 'b',
        type: 'OrderPlaced',
        group: 'g2',
        recordId: 'ledger#b',
        state: 'dead-lettered',
        deliveries: 1,
        lastAt: new Date(T0 + 4).toISOString(),
      },
      {
        key: 'a',
        type: 'OrderPlaced',
        group: 'g1',
        recordId: 'ledger#a',
        state: 'applied',
        deliveries: 2,
        lastAt: new Date(T0 + 3).toISOString(),
      },
    ]);
  });
});

describe('a message in progress', () => {
  it('is one whose latest delivery was given back or deferred, its record held under a live lease now', () => {
    const spans = [
      record('retried', 1, 'given-back'),
      record('late', 2, 'deferred'),
      record('settled', 3, 'given-back'),
      record('settled', 4, 'applied'),
      record('idle', 5, 'given-back'),
    ];
    const deliveries = deliveriesInSpans(spans);
    // Only the unsettled ones are read: the latest first.
    expect(unsettledRecordIds(deliveries)).toEqual(['ledger#idle', 'ledger#late', 'ledger#retried']);
    const states = recentMessages(
      deliveries,
      [],
      {},
      new Set(['ledger#retried', 'ledger#late', 'ledger#settled']),
    ).messages.map(({ key, state }) => [key, state]);
    expect(states).toEqual([
      ['idle', 'given-back'],
      ['settled', 'applied'],
      ['late', 'in progress'],
      ['retried', 'in progress'],
    ]);
    expect(
      recentMessages(deliveries, [], { state: 'in progress' }, new Set(['ledger#late'])).messages.map(
        (m) => m.key,
      ),
    ).toEqual(['late']);
  });
});

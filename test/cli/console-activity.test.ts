import { describe, expect, it } from 'vitest';
import { MESSAGES_LISTED, recentMessages } from '../../cli/console-activity.js';
import type { CollectedSpan } from '../../sandbox/trace-file.js';

// The console's message list and function counts, from a sandbox's spans (pure).

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
    expect(recentMessages(spans, pending, {})).toEqual({
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
      recentMessages(spans, pending, filter).messages.map((m) => m.key);
    expect(keys({ state: 'dead-lettered' })).toEqual(['b']);
    expect(keys({ group: 'g1' })).toEqual(['a']);
    expect(keys({ type: 'OrderPaid' })).toEqual(['c']);
    expect(keys({ key: 'b' })).toEqual(['b']);
    expect(keys({ type: 'OrderPlaced', state: 'applied' })).toEqual([]);
  });

  it(`shows the latest ${MESSAGES_LISTED}, and says there are more`, () => {
    const many = Array.from({ length: MESSAGES_LISTED + 1 }, (_, i) => record(`k${i}`, i, 'applied'));
    const list = recentMessages(many, [], {});
    expect(list.truncated).toBe(true);
    expect(list.messages).toHaveLength(MESSAGES_LISTED);
    expect(list.messages[0]?.key).toBe(`k${MESSAGES_LISTED}`);
  });
});

import { describe, expect, it } from 'vitest';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { memoryGrowth, type Sample } from '../../soak/samples.js';
import { checkSoak, type SoakState } from '../../soak/soak-checks.js';
import { buildSoakWorkload } from '../../soak/soak-workload.js';

describe('the soak workload', () => {
  const workload = buildSoakWorkload({ messages: 2_000, groups: 100, outboxShare: 0.2, poisonEvery: 250 });

  it('has at least the messages asked for, over the groups asked for, a share through the outbox', () => {
    const messages = workload.groups.reduce((n, group) => n + group.messages.length, 0);
    expect(messages).toBeGreaterThanOrEqual(2_000);
    expect(workload.groups).toHaveLength(100);
    expect(workload.groups.filter((group) => group.producer === 'outbox')).toHaveLength(20);
    expect(new Set(workload.groups.map((group) => group.groupId)).size).toBe(100);
  });

  it('gives every mode work, and poison every so often', () => {
    const types = new Set(workload.groups.flatMap((group) => group.messages.map((message) => message.type)));
    for (const type of [
      'OrderPlaced',
      'PaymentCaptured',
      'OrderCancelled',
      'SendNotification',
      'SendReminder',
    ])
      expect(types).toContain(type);
    expect(workload.poison.size).toBeGreaterThanOrEqual(6);
    const keys = new Set(workload.groups.flatMap((group) => group.messages.map((message) => message.key)));
    for (const key of workload.poison) expect(keys).toContain(key);
  });
});

const record = (id: string, status: IdempotencyRecord['status'], updatedAt: number, error?: string) =>
  ({
    id,
    status,
    updatedAt,
    payloadHash: '',
    expiresAt: 0,
    ...(error && { error: { name: error, message: '' } }),
  }) as IdempotencyRecord;

describe('the soak checks', () => {
  const group = {
    groupId: 'customer-0',
    messages: [
      { type: 'SendNotification', groupId: 'customer-0', key: 'receipt-a', payload: {} },
      { type: 'SendReminder', groupId: 'customer-0', key: 'reminder-b', payload: {} },
      { type: 'SendNotification', groupId: 'customer-0', key: 'receipt-c', payload: {} },
    ],
  };
  const healthy = (): SoakState => ({
    records: new Map([
      ['notifications#receipt-a', record('notifications#receipt-a', 'COMPLETED', 1)],
      ['reminders#reminder-b', record('reminders#reminder-b', 'COMPLETED', 2)],
      ['notifications#receipt-c', record('notifications#receipt-c', 'COMPLETED', 3)],
    ]),
    deadLetters: new Map(),
    ledger: { stock: new Map(), balances: new Map() },
    gateway: {
      accepted: new Map([
        ['notifications#receipt-a', 1],
        ['reminders#reminder-b', 2],
        ['notifications#receipt-c', 1],
      ]),
      attempts: new Map(),
      firstAcceptedAt: new Map([
        ['notifications#receipt-a', 1],
        ['reminders#reminder-b', 2],
        ['notifications#receipt-c', 3],
      ]),
    },
  });
  const check = (state: SoakState) =>
    checkSoak({
      groups: [group],
      stock: [],
      poison: new Set(),
      accepted: new Set(['receipt-a', 'reminder-b', 'receipt-c']),
      late: new Set(),
      state,
    });

  it('passes a healthy run, a reminder sent twice (at-least-once) counted, not a violation', () => {
    const verdict = check(healthy());
    expect(verdict.violations).toEqual([]);
    expect(verdict.completed).toBe(3);
    expect(verdict.remindersResent).toBe(1);
  });

  it('judges order by when an e-mail took effect, not by when its record completed', () => {
    // reminder-b was sent in its turn, its COMPLETED write failed while receipt-c ran (pipelined,
    // DESIGN §4), and its redelivery sent it again and completed it last: a repeat, in order.
    const pipelined = healthy();
    pipelined.records.set('reminders#reminder-b', record('reminders#reminder-b', 'COMPLETED', 9));
    expect(check(pipelined).violations).toEqual([]);
  });

  it('finds a lost message, a receipt sent twice, a group out of order and an unexplained IN_DOUBT', () => {
    const lost = healthy();
    lost.records.delete('notifications#receipt-c');
    expect(check(lost).violations).toEqual(['receipt-c: record absent, not in the DLQ (lost)']);

    const twice = healthy();
    twice.gateway.accepted.set('notifications#receipt-a', 2);
    expect(check(twice).violations).toEqual(['notifications#receipt-a: receipt sent 2 times']);

    const reordered = healthy();
    reordered.gateway.firstAcceptedAt.set('notifications#receipt-c', 0);
    expect(check(reordered).violations).toEqual([
      'customer-0: receipt-c took effect before reminder-b, published earlier',
    ]);

    const unexplained = healthy();
    unexplained.records.set('notifications#receipt-c', record('notifications#receipt-c', 'IN_DOUBT', 3));
    expect(check(unexplained).violations).toEqual(['receipt-c: IN_DOUBT without the error that parked it']);
    unexplained.records.set(
      'notifications#receipt-c',
      record('notifications#receipt-c', 'IN_DOUBT', 3, 'OutcomeUnknownError'),
    );
    expect(check(unexplained).inDoubtByCause).toEqual({ OutcomeUnknownError: 1 });
  });
});

describe('memory growth after warm-up', () => {
  const MiB = 2 ** 20;
  const samples = (heap: (i: number) => number, jvm: (i: number) => number): Sample[] =>
    Array.from({ length: 40 }, (_, i) => ({
      atSeconds: i * 10,
      published: i * 1_000,
      queued: 0,
      outboxPending: 0,
      functionHeapBytes: { consumer: heap(i) },
      dynamodbLocalResidentBytes: jvm(i),
      hostHeapUsedBytes: 50 * MiB,
    }));
  const part = (growth: ReturnType<typeof memoryGrowth>, name: string) =>
    growth.find((candidate) => candidate.part.startsWith(name));
  const within = (growth: ReturnType<typeof memoryGrowth>, name: string) => {
    const found = part(growth, name);
    return found !== undefined && found.endBytes <= found.boundBytes;
  };

  it('judges floors, not the sawtooth between collections, and passes an emulator that stores linearly', () => {
    const sawtooth = (i: number) => (20 + (i % 5) * 8) * MiB;
    const storing = (i: number) => (300 + i * 10) * MiB;
    const growth = memoryGrowth(samples(sawtooth, storing), 400);
    expect(part(growth, 'consumer')).toMatchObject({ afterWarmUpBytes: 20 * MiB, endBytes: 20 * MiB });
    expect(within(growth, 'consumer')).toBe(true);
    expect(within(growth, 'DynamoDB Local')).toBe(true);
    expect(within(growth, 'host heap')).toBe(true);
  });

  it('flags a function whose floor keeps rising, and an emulator whose growth per message speeds up', () => {
    const leaking = (i: number) => (20 + i) * MiB;
    const accelerating = (i: number) => (300 + i * i) * MiB;
    const growth = memoryGrowth(samples(leaking, accelerating), 400);
    expect(within(growth, 'consumer')).toBe(false);
    expect(within(growth, 'DynamoDB Local')).toBe(false);
  });
});

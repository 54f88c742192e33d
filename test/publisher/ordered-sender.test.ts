import { describe, expect, it } from 'vitest';
import { MAX_RESULT_BYTES } from '../../lambdas/idempotency/index.js';
import { MAX_MESSAGES_PER_REQUEST } from '../../lambdas/publisher/contract.js';
import {
  type EntryOutcome,
  MAX_REASON_LENGTH,
  type OrderedSendOptions,
  sendInGroupOrder,
} from '../../lambdas/publisher/ordered-sender.js';
import type { PreparedMessage } from '../../lambdas/publisher/validation.js';

/** Messages named by group and position, e.g. "A0", "A1", "B0". */
function prepared(...keys: string[]): PreparedMessage[] {
  return keys.map((key, index) => ({ index, key, groupId: key.replace(/\d+$/, ''), body: key, bytes: 10 }));
}

const ACCEPTED: EntryOutcome = { sent: true, messageId: 'id', sequenceNumber: '1' };
const TRANSIENT: EntryOutcome = {
  sent: false,
  retryable: true,
  maybeSent: false,
  reason: 'InternalError: try again',
};
const PERMANENT: EntryOutcome = {
  sent: false,
  retryable: false,
  maybeSent: false,
  reason: 'InvalidMessageContents: no',
};
/** A call SQS may have applied, whose answer was lost. */
const LOST: EntryOutcome = { sent: false, retryable: true, maybeSent: true, reason: 'Error: socket hang up' };

/**
 * A fake SendMessageBatch: `decide` answers for each entry, and — unless `laterEntriesOfGroupFail`
 * is false — a failed entry's later entries of the same group fail alike. Every call is recorded.
 */
function fakeQueue(
  decide: (key: string, attempt: number) => EntryOutcome = () => ACCEPTED,
  laterEntriesOfGroupFail = true,
) {
  const calls: string[][] = [];
  const attempts = new Map<string, number>();
  const options: OrderedSendOptions = {
    sendBatch: async (batch) => {
      calls.push(batch.map((message) => message.key));
      const failedGroups = new Map<string, EntryOutcome>();
      return batch.map(({ key, groupId }) => {
        const attempt = (attempts.get(key) ?? 0) + 1;
        attempts.set(key, attempt);
        const outcome = (laterEntriesOfGroupFail && failedGroups.get(groupId)) || decide(key, attempt);
        if (!outcome.sent) failedGroups.set(groupId, outcome);
        return outcome;
      });
    },
    maxBatchBytes: 262_144,
    retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 2 },
    timeLeftMs: () => 60_000,
  };
  return { calls, options };
}

const statusOf = (results: { key: string; status: string }[]) =>
  Object.fromEntries(results.map((result) => [result.key, result.status]));

describe('sendInGroupOrder', () => {
  it('holds back the later messages of a group whose message is retried, and lets other groups go on', async () => {
    const messages = prepared(...['A0', 'B0', 'A1', 'B1', 'A2', 'B2', 'A3', 'B3', 'A4', 'B4'], 'A5', 'B5');
    const queue = fakeQueue((key, attempt) => (key === 'A1' && attempt === 1 ? TRANSIENT : ACCEPTED));

    const results = await sendInGroupOrder(messages, queue.options);

    expect(results.every((result) => result.status === 'sent')).toBe(true);
    // One message of a group per call. A1 failed, so A2…A5 wait for it, in the next round.
    expect(queue.calls).toEqual([
      ['A0', 'B0'],
      ['A1', 'B1'],
      ['B2'],
      ['B3'],
      ['B4'],
      ['B5'],
      ['A1'],
      ['A2'],
      ['A3'],
      ['A4'],
      ['A5'],
    ]);
  });

  it('blocks the rest of a group after a permanent failure, naming the failed message', async () => {
    const queue = fakeQueue((key) => (key === 'A1' ? PERMANENT : ACCEPTED));
    const results = await sendInGroupOrder(prepared('A0', 'A1', 'B0', 'A2', 'B1'), queue.options);

    expect(statusOf(results)).toEqual({ A0: 'sent', A1: 'failed', B0: 'sent', A2: 'blocked', B1: 'sent' });
    expect(results[1]).toMatchObject({ reason: 'InvalidMessageContents: no' });
    expect(results[3]).toMatchObject({
      reason: expect.stringContaining('messages[1] of the same group failed'),
    });
    expect(queue.calls).toEqual([
      ['A0', 'B0'],
      ['A1', 'B1'],
    ]);
  });

  it('sends one message of each group per call, groups batched together', async () => {
    const queue = fakeQueue();
    const results = await sendInGroupOrder(prepared('A0', 'B0', 'A1', 'B1', 'A2'), queue.options);

    expect(results.every((result) => result.status === 'sent')).toBe(true);
    expect(queue.calls).toEqual([['A0', 'B0'], ['A1', 'B1'], ['A2']]);
  });

  it('retries a failed message before its group goes on, whatever SQS does with later entries', async () => {
    const queue = fakeQueue((key, attempt) => (key === 'A1' && attempt === 1 ? TRANSIENT : ACCEPTED), false);
    const results = await sendInGroupOrder(prepared('A0', 'B0', 'A1', 'B1', 'A2', 'B2'), queue.options);

    expect(statusOf(results)).toEqual({
      A0: 'sent',
      B0: 'sent',
      A1: 'sent',
      B1: 'sent',
      A2: 'sent',
      B2: 'sent',
    });
    // A2 waits for A1's retry, in the next round; B goes on meanwhile.
    expect(queue.calls).toEqual([['A0', 'B0'], ['A1', 'B1'], ['B2'], ['A1'], ['A2']]);
  });

  it('with ordered: false (a standard queue), retries a failure whatever SQS accepted after it, and blocks nothing', async () => {
    const queue = fakeQueue((key, attempt) => {
      if (key === 'A1') return attempt === 1 ? TRANSIENT : ACCEPTED;
      return key === 'A3' ? PERMANENT : ACCEPTED;
    }, false);
    const results = await sendInGroupOrder(prepared('A0', 'A1', 'A2', 'A3', 'A4'), {
      ...queue.options,
      ordered: false,
    });

    // On FIFO, A1's retry would hold back A2…A4, each in a call of its own.
    expect(statusOf(results)).toEqual({ A0: 'sent', A1: 'sent', A2: 'sent', A3: 'failed', A4: 'sent' });
    expect(queue.calls).toEqual([['A0', 'A1', 'A2', 'A3', 'A4'], ['A1']]);
  });

  it('gives up after the last attempt and blocks the rest of the group', async () => {
    const queue = fakeQueue((key) => (key === 'A0' ? TRANSIENT : ACCEPTED));
    const results = await sendInGroupOrder(prepared('A0', 'A1', 'B0'), queue.options);

    expect(statusOf(results)).toEqual({ A0: 'failed', A1: 'blocked', B0: 'sent' });
    expect(results[0]).toMatchObject({ reason: 'InternalError: try again (gave up after 4 attempts)' });
    expect(queue.calls.filter((call) => call.includes('A0'))).toHaveLength(4);
  });

  it('reports unknown, never failed, a message an attempt may have enqueued; the rest of its group stays blocked', async () => {
    const queue = fakeQueue((key) => (key === 'A1' ? LOST : ACCEPTED));

    const results = await sendInGroupOrder(prepared('A0', 'A1', 'A2', 'A3', 'A4'), queue.options);

    expect(statusOf(results)).toEqual({
      A0: 'sent',
      A1: 'unknown',
      A2: 'blocked',
      A3: 'blocked',
      A4: 'blocked',
    });
    expect(results[1]).toMatchObject({
      reason: 'may be on the queue: Error: socket hang up (gave up after 4 attempts)',
    });
    expect(results[2]).toMatchObject({
      reason: expect.stringContaining('messages[1] of the same group may not have been sent'),
    });
    // No call carried a message of the group behind A1: they are certainly not on the queue.
    expect(queue.calls).toEqual([['A0'], ['A1'], ['A1'], ['A1'], ['A1']]);
  });

  it('keeps a message unknown when a later attempt fails for certain: the earlier one may have enqueued it', async () => {
    const queue = fakeQueue((key, attempt) => {
      if (key !== 'A0') return ACCEPTED;
      return attempt === 1 ? LOST : PERMANENT;
    });
    const results = await sendInGroupOrder(prepared('A0', 'A1', 'B0'), queue.options);

    expect(statusOf(results)).toEqual({ A0: 'unknown', A1: 'blocked', B0: 'sent' });
    expect(results[0]).toMatchObject({ reason: 'may be on the queue: InvalidMessageContents: no' });
    expect(queue.calls).toEqual([['A0', 'B0'], ['A0']]);
  });

  it('stops retrying when the time left cannot cover the backoff', async () => {
    const queue = fakeQueue(() => TRANSIENT);
    const timeLeft = [60_000, 500]; // after the first call, 500 ms: less than the 1-second backoff
    const results = await sendInGroupOrder(prepared('A0', 'A1'), {
      ...queue.options,
      retry: { maxAttempts: 10, baseDelayMs: 2_000, maxDelayMs: 2_000 },
      timeLeftMs: () => timeLeft.shift() ?? 0,
    });

    expect(results[0]).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('no time left for another'),
    });
    expect(results[1]?.status).toBe('blocked');
    expect(queue.calls).toHaveLength(1);
  });

  it('sends nothing once the invocation is out of time, and says so', async () => {
    const queue = fakeQueue();
    const results = await sendInGroupOrder(prepared('A0', 'A1', 'B0'), {
      ...queue.options,
      timeLeftMs: () => 20,
    });

    expect(statusOf(results)).toEqual({ A0: 'failed', A1: 'blocked', B0: 'failed' });
    expect(results[0]).toMatchObject({ reason: 'not sent: the invocation ran out of time' });
    expect(queue.calls).toEqual([]);
  });

  it('keeps every possible response within what an idempotency record stores', async () => {
    const reason = 'x'.repeat(5_000);
    const queue = fakeQueue(() => ({ sent: false, retryable: false, maybeSent: false, reason }));
    const longKeys = Array.from({ length: MAX_MESSAGES_PER_REQUEST }, (_, i) => `${i}`.padStart(128, 'k'));
    const messages = longKeys.map((key, index) => ({ index, key, groupId: key, body: '{}', bytes: 2 }));

    const results = await sendInGroupOrder(messages, queue.options);

    expect(results[0]).toMatchObject({ status: 'failed', reason: reason.slice(0, MAX_REASON_LENGTH) });
    expect(Buffer.byteLength(JSON.stringify({ results }))).toBeLessThan(MAX_RESULT_BYTES);
  });
});

import { describe, expect, it } from 'vitest';
import { planGroups } from '../../lambdas/consumer/group-plan.js';
import { type RecordStep, type RecordVerdict, runGroups } from '../../lambdas/consumer/group-runner.js';

// The FIFO rules of DESIGN §5 without AWS: records are strings "<group><n>", e.g. "A1".
const groupOf = (record: string) => record.slice(0, 1);
const batch = (...records: string[]) => planGroups(records, groupOf);
const yieldToOtherGroups = () => new Promise((resolve) => setImmediate(resolve));
/** Every group processed by the same function of a record. */
const each = (processRecord: (record: string) => Promise<RecordStep>) => () => ({ processRecord });

describe('planGroups', () => {
  it('keeps delivery order within a group and orders groups by their first record', () => {
    expect(batch('B1', 'A1', 'B2', 'C1', 'A2', 'B3')).toEqual([
      { groupId: 'B', records: ['B1', 'B2', 'B3'] },
      { groupId: 'A', records: ['A1', 'A2'] },
      { groupId: 'C', records: ['C1'] },
    ]);
    expect(batch()).toEqual([]);
  });
});

describe('runGroups', () => {
  it('runs a group in order, one record at a time, and groups side by side', async () => {
    const events: string[] = [];
    const running = new Set<string>();
    const report = await runGroups(
      batch('A1', 'B1', 'A2', 'B2', 'A3'),
      10,
      each(async (record) => {
        expect([...running].filter((other) => groupOf(other) === groupOf(record))).toEqual([]);
        running.add(record);
        events.push(`start ${record}`);
        await yieldToOtherGroups();
        running.delete(record);
        return 'succeeded';
      }),
    );
    expect(report).toEqual({ failed: [], skipped: [], deferred: [], heldBack: [] });
    expect(events.filter((event) => event.includes('A'))).toEqual(['start A1', 'start A2', 'start A3']);
    // B started before A finished: the groups really ran concurrently.
    expect(events.slice(0, 2)).toEqual(['start A1', 'start B1']);
  });

  it('skips the rest of a group after a failure, and other groups go on', async () => {
    const ran: string[] = [];
    const verdicts: Record<string, RecordVerdict> = { A2: 'failed' };
    const report = await runGroups(
      batch('A1', 'A2', 'B1', 'A3', 'B2', 'A4'),
      10,
      each(async (record) => {
        ran.push(record);
        return verdicts[record] ?? 'succeeded';
      }),
    );
    expect(report).toEqual({ failed: ['A2'], skipped: ['A3', 'A4'], deferred: [], heldBack: [] });
    expect(ran.sort()).toEqual(['A1', 'A2', 'B1', 'B2']);
  });

  it('never runs more groups at once than the bound', async () => {
    let running = 0;
    let mostAtOnce = 0;
    const report = await runGroups(
      batch('A1', 'B1', 'C1', 'D1', 'E1', 'A2', 'C2'),
      2,
      each(async () => {
        mostAtOnce = Math.max(mostAtOnce, ++running);
        await yieldToOtherGroups();
        running--;
        return 'succeeded';
      }),
    );
    expect(report).toEqual({ failed: [], skipped: [], deferred: [], heldBack: [] });
    expect(mostAtOnce).toBe(2);
  });

  it('on a whole-batch error starts nothing more, lets running records finish, and throws it', async () => {
    const outage = new Error('table unreachable');
    const finished: string[] = [];
    const signals: AbortSignal[] = [];
    let failB1!: () => void;
    const b1Failed = new Promise<void>((resolve) => (failB1 = resolve));

    const run = runGroups(batch('A1', 'B1', 'A2', 'C1'), 2, (_group, signal) => ({
      processRecord: async (record) => {
        signals.push(signal);
        if (record === 'B1') {
          failB1();
          throw outage;
        }
        if (record === 'A1') await b1Failed; // A1 is still running when B1 fails the batch
        finished.push(record);
        return 'succeeded';
      },
    }));

    await expect(run).rejects.toBe(outage);
    expect(finished).toEqual(['A1']);
    expect(signals.every((signal) => signal.aborted && signal.reason === outage)).toBe(true);
  });

  it('starts the next record while a record settles, and a failure that settles later stops the group there', async () => {
    const events: string[] = [];
    let settleA1!: (verdict: 'succeeded' | 'failed') => void;
    const a1 = new Promise<'succeeded' | 'failed'>((resolve) => (settleA1 = resolve));
    const done: string[] = [];
    const report = await runGroups(batch('A1', 'A2', 'A3', 'A4', 'B1'), 10, (group) => ({
      processRecord: async (record) => {
        events.push(`start ${record}`);
        if (record === 'A1') return { settling: a1 };
        // A1's record write fails once A2 has run: A3 is the first record that never starts.
        if (record === 'A2') settleA1('failed');
        await yieldToOtherGroups();
        return 'succeeded';
      },
      done: async () => {
        done.push(group.groupId);
      },
    }));
    expect(events).toEqual(['start A1', 'start B1', 'start A2']);
    expect(report).toEqual({ failed: ['A1'], skipped: ['A3', 'A4'], deferred: [], heldBack: ['A2'] });
    expect(done.sort()).toEqual(['A', 'B']);
  });

  it('waits for every settling record before it reports, and tells each group when it has no more turns', async () => {
    const order: string[] = [];
    const report = await runGroups(batch('A1', 'A2', 'A3'), 10, () => ({
      processRecord: async (record): Promise<RecordStep> => {
        order.push(`turn ${record}`);
        if (record === 'A3') return 'deferred';
        return {
          settling: yieldToOtherGroups().then(() => {
            order.push(`settled ${record}`);
            return 'succeeded' as const;
          }),
        };
      },
      done: async () => {
        order.push('done');
      },
    }));
    expect(report).toEqual({ failed: [], skipped: [], deferred: ['A3'], heldBack: [] });
    expect(order.slice(0, 3)).toEqual(['turn A1', 'turn A2', 'turn A3']);
    expect(order).toContain('done');
    expect(order.filter((event) => event.startsWith('settled'))).toHaveLength(2);
  });

  it('fails the batch when a settling record rejects, and still tells its group it is done', async () => {
    const outage = new Error('table unreachable');
    let done = false;
    const run = runGroups(batch('A1', 'A2'), 10, () => ({
      processRecord: async (record) => (record === 'A1' ? { settling: Promise.reject(outage) } : 'succeeded'),
      done: async () => {
        done = true;
      },
    }));
    await expect(run).rejects.toBe(outage);
    expect(done).toBe(true);
  });
  it('tells a group it stopped as soon as a record of it fails, or the batch does, while a record still runs', async () => {
    const seen: Record<string, boolean> = {};
    let settleA1!: (verdict: 'succeeded' | 'failed') => void;
    const a1 = new Promise<'succeeded' | 'failed'>((resolve) => (settleA1 = resolve));
    const outage = new Error('table unreachable');
    const run = runGroups(batch('A1', 'A2', 'B1', 'C1'), 10, (_group, _signal, stopped) => ({
      processRecord: async (record): Promise<RecordStep> => {
        if (record === 'A1') return { settling: a1 };
        if (record === 'A2') {
          settleA1('failed');
          await yieldToOtherGroups();
          seen.A2 = stopped.aborted; // its own group's failure
          return 'succeeded';
        }
        if (record === 'B1') {
          await yieldToOtherGroups();
          await yieldToOtherGroups();
          seen.B1 = stopped.aborted; // the batch's failure, from group C
          return 'succeeded';
        }
        throw outage;
      },
    }));
    await expect(run).rejects.toBe(outage);
    expect(seen).toEqual({ A2: true, B1: true });
  });
});

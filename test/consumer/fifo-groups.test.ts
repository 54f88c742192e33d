import { describe, expect, it } from 'vitest';
import { planGroups } from '../../src/consumer/group-plan.js';
import { type RecordVerdict, runGroups } from '../../src/consumer/group-runner.js';

// The FIFO rules of DESIGN §5 without AWS: records are strings "<group><n>", e.g. "A1".
const groupOf = (record: string) => record.slice(0, 1);
const batch = (...records: string[]) => planGroups(records, groupOf);
const yieldToOtherGroups = () => new Promise((resolve) => setImmediate(resolve));

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
    const report = await runGroups(batch('A1', 'B1', 'A2', 'B2', 'A3'), 10, async (record) => {
      expect([...running].filter((other) => groupOf(other) === groupOf(record))).toEqual([]);
      running.add(record);
      events.push(`start ${record}`);
      await yieldToOtherGroups();
      running.delete(record);
      return 'succeeded';
    });
    expect(report).toEqual({ failed: [], skipped: [], deferred: [] });
    expect(events.filter((event) => event.includes('A'))).toEqual(['start A1', 'start A2', 'start A3']);
    // B started before A finished: the groups really ran concurrently.
    expect(events.slice(0, 2)).toEqual(['start A1', 'start B1']);
  });

  it('skips the rest of a group after a failure, and other groups go on', async () => {
    const ran: string[] = [];
    const verdicts: Record<string, RecordVerdict> = { A2: 'failed' };
    const report = await runGroups(batch('A1', 'A2', 'B1', 'A3', 'B2', 'A4'), 10, async (record) => {
      ran.push(record);
      return verdicts[record] ?? 'succeeded';
    });
    expect(report).toEqual({ failed: ['A2'], skipped: ['A3', 'A4'], deferred: [] });
    expect(ran.sort()).toEqual(['A1', 'A2', 'B1', 'B2']);
  });

  it('never runs more groups at once than the bound', async () => {
    let running = 0;
    let mostAtOnce = 0;
    const report = await runGroups(batch('A1', 'B1', 'C1', 'D1', 'E1', 'A2', 'C2'), 2, async () => {
      mostAtOnce = Math.max(mostAtOnce, ++running);
      await yieldToOtherGroups();
      running--;
      return 'succeeded';
    });
    expect(report).toEqual({ failed: [], skipped: [], deferred: [] });
    expect(mostAtOnce).toBe(2);
  });

  it('on a whole-batch error starts nothing more, lets running records finish, and throws it', async () => {
    const outage = new Error('table unreachable');
    const finished: string[] = [];
    const signals: AbortSignal[] = [];
    let failB1!: () => void;
    const b1Failed = new Promise<void>((resolve) => (failB1 = resolve));

    const run = runGroups(batch('A1', 'B1', 'A2', 'C1'), 2, async (record, signal) => {
      signals.push(signal);
      if (record === 'B1') {
        failB1();
        throw outage;
      }
      if (record === 'A1') await b1Failed; // A1 is still running when B1 fails the batch
      finished.push(record);
      return 'succeeded';
    });

    await expect(run).rejects.toBe(outage);
    expect(finished).toEqual(['A1']);
    expect(signals.every((signal) => signal.aborted && signal.reason === outage)).toBe(true);
  });
});

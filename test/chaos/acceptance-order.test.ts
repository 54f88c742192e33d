import { describe, expect, it } from 'vitest';
import { acceptancePositions } from '../../chaos/invariants.js';
import type { ScheduleRun } from '../../chaos/run-schedule.js';
import type { MessageStatus } from '../../lambdas/publisher/contract.js';

// The order check's model of publish order (DESIGN §11): where each message of a schedule was
// accepted, given what its publish and the later `republish` steps answered.

const keys = ['m0', 'm1', 'm2'];

/** A run with only what the model reads: the keys, the publish's answers and the republishes. */
function runWith(
  finals: Record<string, MessageStatus>[],
  republished: { key: string; status: MessageStatus | undefined }[] = [],
  repeat?: 'concurrent',
): ScheduleRun {
  return {
    keys,
    schedule: { publishRounds: repeat ? { repeat } : undefined },
    publication: { finals: finals.map((final) => new Map(Object.entries(final))) },
    republished,
  } as unknown as ScheduleRun;
}

const sent = { m0: 'sent', m1: 'sent', m2: 'sent' } as const;

describe('acceptancePositions', () => {
  it('places what the publish sent in schedule order; a republish of it is a duplicate', () => {
    const positions = acceptancePositions(runWith([sent], [{ key: 'm0', status: 'sent' }]));
    expect([...positions]).toEqual([
      ['m0', 0],
      ['m1', 1],
      ['m2', 2],
    ]);
  });

  it('places refused messages where the producer republished them, in that order', () => {
    const run = runWith(
      [{ m0: 'unknown', m1: 'blocked', m2: 'blocked' }],
      [
        { key: 'm2', status: 'sent' },
        { key: 'm1', status: 'sent' },
      ],
    );
    const positions = acceptancePositions(run);
    expect(positions.get('m0')).toBe(0);
    expect(positions.get('m2')).toBeLessThan(positions.get('m1') as number);
    expect(positions.get('m0')).toBeLessThan(positions.get('m2') as number);
  });

  it('skips a republish that failed: the first that may have sent it places it', () => {
    const run = runWith(
      [{ m0: 'sent', m1: 'failed', m2: 'sent' }],
      [
        { key: 'm1', status: 'failed' },
        { key: 'm2', status: 'sent' },
        { key: 'm1', status: 'sent' },
      ],
    );
    expect(acceptancePositions(run).get('m1')).toBe(keys.length + 2);
  });

  it('knows no place for a message two sends may each have placed', () => {
    const unknownThenRepublished = runWith(
      [{ m0: 'sent', m1: 'unknown', m2: 'sent' }],
      [{ key: 'm1', status: 'sent' }],
    );
    const publishThrew = runWith([], [{ key: 'm1', status: 'sent' }]);
    const twoRepublishes = runWith(
      [{ m0: 'sent', m1: 'blocked', m2: 'sent' }],
      [
        { key: 'm1', status: 'unknown' },
        { key: 'm1', status: 'sent' },
      ],
    );
    for (const run of [unknownThenRepublished, publishThrew, twoRepublishes]) {
      expect(acceptancePositions(run).has('m1')).toBe(false);
      expect(acceptancePositions(run).get('m2')).toBe(2);
    }
  });

  it('with two calls at once, a message is refused only if every call refused it', () => {
    const calls = [
      { m0: 'sent', m1: 'blocked', m2: 'sent' },
      { m0: 'sent', m1: 'unknown', m2: 'sent' },
    ] as Record<string, MessageStatus>[];
    const run = runWith(calls, [{ key: 'm1', status: 'sent' }], 'concurrent');
    expect(acceptancePositions(run).has('m1')).toBe(false);
  });
});

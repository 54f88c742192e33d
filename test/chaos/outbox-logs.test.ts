import { describe, expect, it } from 'vitest';
import { ClaimLog } from '../../chaos/outbox-claims.js';
import { SendLog } from '../../chaos/outbox-sends.js';
import { MarkerStream } from '../../chaos/outbox-stream.js';
import { OutboxTraffic } from '../../chaos/outbox-traffic.js';
import type { ChaosRequest } from '../../harness/faults.js';

// What the outbox schedules observe, on their own: a check that could never fail would prove nothing.

describe('the send log', () => {
  it('explains a copy by what happened before it, never after', () => {
    const sends = new SendLog();
    sends.arrived('a', false);
    sends.explain(['a'], 'crash');
    sends.arrived('a', false); // sent again after its sender died: explained
    sends.arrived('b', false);
    sends.arrived('b', false); // a stale sender's copy…
    sends.explain(['b'], 'mark-not-written'); // …whose own mark then failed: that explains nothing
    const verdict = sends.verdict();
    expect(verdict.duplicates).toBe(2);
    expect(verdict.unexplained).toEqual([
      { key: 'b', arrivals: 2, copy: 2, explanations: ['mark-not-written'] },
    ]);
    expect(verdict.explained).toMatchObject({ crash: 1, 'mark-not-written': 1 });
  });

  it('lets one lost answer explain one copy only', () => {
    const sends = new SendLog();
    sends.arrived('a', true);
    sends.arrived('a', false);
    sends.arrived('a', false);
    expect(sends.verdict().unexplained).toEqual([
      { key: 'a', arrivals: 3, copy: 3, explanations: ['lost-answer'] },
    ]);
  });
});

describe("the outbox traffic's record of sends", () => {
  const batch = (ordinal: number, keys: string[]): ChaosRequest => ({
    service: 'sqs',
    operation: 'SendMessageBatch',
    ordinal,
    body: { Entries: keys.map((key, index) => ({ Id: `m${index}`, MessageDeduplicationId: `run-${key}` })) },
  });
  const traffic = (sends: SendLog) => {
    const outbox = new OutboxTraffic({ seed: 1, rates: {} }, 'run', sends);
    outbox.faults = false;
    return outbox;
  };

  it('explains the copy sent again after the proxy got no answer from SQS, and only that one', () => {
    const sends = new SendLog();
    const outbox = traffic(sends);
    const first = batch(1, ['a', 'b']);
    outbox.plan(first);
    outbox.unanswered(first, undefined); // the proxy's socket to SQS was reset: the sender saw no answer
    outbox.plan(batch(2, ['a', 'b']));
    outbox.plan(batch(3, ['a'])); // a third copy that nothing explains
    const verdict = sends.verdict();
    expect(verdict.explained['lost-answer']).toBe(2);
    expect(verdict.unexplained).toEqual([
      { key: 'run-a', arrivals: 3, copy: 3, explanations: ['lost-answer'] },
    ]);
  });

  it('gives no copy to an entry a fail-entry kept from SQS', () => {
    const sends = new SendLog();
    const outbox = traffic(sends);
    // Only `a` went on, and the proxy got no answer for it; `b` never left the proxy.
    outbox.unanswered(batch(1, ['a', 'b']), { kind: 'fail-entry', entry: 1 });
    outbox.plan(batch(2, ['b']));
    outbox.plan(batch(3, ['b']));
    expect(sends.verdict().unexplained).toEqual([{ key: 'run-b', arrivals: 2, copy: 2, explanations: [] }]);
  });
});

describe('the claim log', () => {
  // A holder whose invocation started at `now` lives 30 ticks; its lease adds a margin of 10.
  const grant = (log: ClaimLog, owner: string, now: number, clockAtGrant = now) =>
    log.granted({
      key: 'k',
      owner,
      askedAt: log.asking(),
      now,
      expiresAt: now + 40,
      clockAtGrant,
      liveUntil: now + 30,
    });

  it('finds two owners of one live claim', () => {
    const log = new ClaimLog();
    grant(log, 'relay:a', 0);
    grant(log, 'sweeper:b', 10);
    expect(log.overlaps()).toHaveLength(1);
  });

  it('accepts a claim taken after the lease ran out, or after its holder let go', () => {
    const expired = new ClaimLog();
    grant(expired, 'relay:a', 0);
    grant(expired, 'sweeper:b', 40);
    const released = new ClaimLog();
    grant(released, 'relay:a', 0);
    released.lettingGo('relay:a', 'k');
    grant(released, 'sweeper:b', 10);
    expect([...expired.overlaps(), ...released.overlaps()]).toEqual([]);
  });

  it('judges a lease when the later claim came back, not by that claim’s older clock', () => {
    // Found by a schedule (seed 1706674020, path 181:8:11:11:18:21:14): a stalled relay's claim,
    // asked at 5, was applied once the clock had passed relay:a's lease, after a sweeper had
    // taken the message over and let it go.
    const stale = new ClaimLog();
    grant(stale, 'relay:a', 0);
    grant(stale, 'relay:b', 5, 50);
    const live = new ClaimLog();
    grant(live, 'relay:a', 0);
    grant(live, 'relay:b', 5, 29);
    expect(stale.overlaps()).toEqual([]);
    expect(live.overlaps()).toHaveLength(1);
  });

  it('judges a claim by its holder’s life on the schedule’s clock, leaving the margin to skewed clocks', () => {
    // A sweeper whose clock is 8 ahead finds relay:a's lease (40) expired at 32 by the schedule's
    // clock: relay:a timed out at 30, so no one else held it. At 28, relay:a could still act.
    const withinMargin = new ClaimLog();
    grant(withinMargin, 'relay:a', 0);
    grant(withinMargin, 'sweeper:b', 40, 32);
    const beyondMargin = new ClaimLog();
    grant(beyondMargin, 'relay:a', 0);
    grant(beyondMargin, 'sweeper:b', 40, 28);
    expect(withinMargin.overlaps()).toEqual([]);
    expect(beyondMargin.overlaps()).toHaveLength(1);
  });
});

describe('the marker stream', () => {
  const image = (n: number) => ({ pk: { S: `marker-${n}` } });
  const sequences = (stream: MarkerStream, shard: number) =>
    stream.next(shard).Records.map((record) => record.dynamodb?.SequenceNumber);

  it('retries a batch from the record the relay reported, and skips it after three failed attempts', () => {
    const stream = new MarkerStream(2);
    for (let n = 0; n < 6; n++) stream.insert(n % 2, image(n));
    const first = stream.next(0);
    const [, second] = first.Records;
    stream.settle(0, first, {
      batchItemFailures: [{ itemIdentifier: String(second?.dynamodb?.SequenceNumber) }],
    });
    expect(sequences(stream, 0)).toEqual([second?.dynamodb?.SequenceNumber, expect.any(String)]);
    for (let attempt = 0; attempt < 3; attempt++) stream.settle(0, stream.next(0), 'crashed');
    expect(sequences(stream, 0)).toEqual([]);
    expect(sequences(stream, 1)).toHaveLength(3); // the other shard is read on its own
  });
});

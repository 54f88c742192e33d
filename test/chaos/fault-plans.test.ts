import { describe, expect, it } from 'vitest';
import { subjectFaultPlan } from '../../chaos/subject-fault-plan.js';
import { combinePlans } from '../../harness/combine-plans.js';
import { type ChaosRequest, type Fault, type FaultPlan, FaultPlanError } from '../../harness/faults.js';
import { requestFingerprint } from '../../harness/fingerprint.js';
import { mulberry32 } from '../../harness/hash.js';
import { seededFaultPlan } from '../../harness/seeded-plan.js';
import { targetedFaultPlan } from '../../harness/targeted-plan.js';

const RATES = { 'fail-before': 0.1, 'lose-answer': 0.1, throttle: 0.05, delay: 0.05 };

const putItem = (id: string): Omit<ChaosRequest, 'ordinal'> => ({
  service: 'dynamodb',
  operation: 'PutItem',
  body: { TableName: 't', Item: { id: { S: id } } },
});

/** Runs `requests` through `plan`; returns each decision by fingerprint and occurrence (times seen). */
function decide(plan: FaultPlan, requests: Omit<ChaosRequest, 'ordinal'>[]): Map<string, Fault | undefined> {
  const decisions = new Map<string, Fault | undefined>();
  const seen = new Map<string, number>();
  requests.forEach((request, i) => {
    const fingerprint = requestFingerprint(request);
    const occurrence = (seen.get(fingerprint) ?? 0) + 1;
    seen.set(fingerprint, occurrence);
    decisions.set(`${fingerprint}#${occurrence}`, plan({ ...request, ordinal: i + 1 }));
  });
  return decisions;
}

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const random = mulberry32(seed);
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

describe('seededFaultPlan', () => {
  // 300 items, each sent three times (a first try and two retries), as concurrent callers would.
  const requests = Array.from({ length: 900 }, (_, i) => putItem(`item-${i % 300}`));

  it('decides the same faults for the same fingerprints whatever order the requests arrive in', () => {
    const inOrder = decide(seededFaultPlan({ seed: 42, rates: RATES }), requests);
    const interleaved = decide(seededFaultPlan({ seed: 42, rates: RATES }), shuffled(requests, 7));

    expect(interleaved).toEqual(inOrder);
    expect([...inOrder.values()].filter(Boolean).length).toBeGreaterThan(0);
  });

  it('decides differently with another seed, and a retry may be decided differently from its first try', () => {
    const seed42 = decide(seededFaultPlan({ seed: 42, rates: RATES }), requests);
    const seed43 = decide(seededFaultPlan({ seed: 43, rates: RATES }), requests);
    expect(seed43).not.toEqual(seed42);
    const firstTries = [...seed42].filter(([key]) => key.endsWith('#1')).map(([, fault]) => fault?.kind);
    const retries = [...seed42].filter(([key]) => key.endsWith('#2')).map(([, fault]) => fault?.kind);
    expect(retries).not.toEqual(firstTries);
  });

  it('injects each kind at about its rate, delays with the default 20 ms', () => {
    const many = Array.from({ length: 20_000 }, (_, i) => putItem(`item-${i}`));
    const faults = [...decide(seededFaultPlan({ seed: 1, rates: RATES }), many).values()];
    const share = (kind: string) => faults.filter((fault) => fault?.kind === kind).length / faults.length;

    for (const [kind, rate] of Object.entries(RATES)) {
      expect(Math.abs(share(kind) - rate), kind).toBeLessThan(0.01);
    }
    expect(faults.find((fault) => fault?.kind === 'delay')).toEqual({ kind: 'delay', ms: 20 });
  });

  it('faults only the listed operations', () => {
    const plan = seededFaultPlan({ seed: 5, rates: { 'fail-before': 1 }, operations: ['UpdateItem'] });
    expect(plan({ ...putItem('a'), ordinal: 1 })).toBeUndefined();
    expect(plan({ ...putItem('a'), operation: 'UpdateItem', ordinal: 2 })).toEqual({ kind: 'fail-before' });
  });

  it('fails a SendMessageBatch entry that a later entry of its group follows, else the first; nothing else', () => {
    const plan = seededFaultPlan({ seed: 3, rates: { 'fail-entry': 1 } });
    const batch = (groups: string[]): ChaosRequest => ({
      service: 'sqs',
      operation: 'SendMessageBatch',
      body: {
        QueueUrl: 'q.fifo',
        Entries: groups.map((group, i) => ({
          MessageGroupId: group,
          MessageDeduplicationId: `${group}${i}`,
        })),
      },
      ordinal: 1,
    });
    expect(plan(batch(['a', 'b', 'c', 'b']))).toEqual({ kind: 'fail-entry', entry: 1 });
    expect(plan(batch(['a', 'b', 'c']))).toEqual({ kind: 'fail-entry', entry: 0 });
    expect(plan({ ...putItem('a'), ordinal: 2 })).toBeUndefined();
  });

  it('refuses rates that cannot be probabilities', () => {
    expect(() => seededFaultPlan({ seed: 1, rates: { 'fail-before': 0.7, 'lose-answer': 0.4 } })).toThrow(
      FaultPlanError,
    );
    expect(() => seededFaultPlan({ seed: 1, rates: { throttle: -0.1 } })).toThrow(FaultPlanError);
    expect(() =>
      seededFaultPlan({ seed: 1, rates: { 'fail-before': 0.7, throttle: 0.2, delay: 0.1 } }),
    ).not.toThrow();
  });
});

describe('targetedFaultPlan', () => {
  const parkAsInDoubt = (id: string): ChaosRequest => ({
    service: 'dynamodb',
    operation: 'UpdateItem',
    body: { Key: { id: { S: id } }, ExpressionAttributeValues: { ':status': { S: 'IN_DOUBT' } } },
    ordinal: 0,
  });
  const writesInDoubt = (request: ChaosRequest) =>
    request.operation === 'UpdateItem' &&
    JSON.stringify(request.body.ExpressionAttributeValues).includes('IN_DOUBT');

  it('fails the first matching request every time it is sent (a persistent failure), and nothing else', () => {
    const plan = targetedFaultPlan({ match: writesInDoubt, fault: { kind: 'fail-before' } });

    expect(plan(putItem('a') as ChaosRequest)).toBeUndefined();
    expect(plan(parkAsInDoubt('a'))).toEqual({ kind: 'fail-before' });
    expect(plan(parkAsInDoubt('b'))).toBeUndefined();
    expect(plan(parkAsInDoubt('a'))).toEqual({ kind: 'fail-before' });
    expect(plan(parkAsInDoubt('a'))).toEqual({ kind: 'fail-before' });
  });

  it('targets the nth distinct match, as many times as asked', () => {
    const plan = targetedFaultPlan({
      match: writesInDoubt,
      fault: { kind: 'lose-answer' },
      nth: 2,
      times: 1,
    });

    expect(plan(parkAsInDoubt('a'))).toBeUndefined();
    expect(plan(parkAsInDoubt('a'))).toBeUndefined();
    expect(plan(parkAsInDoubt('b'))).toEqual({ kind: 'lose-answer' });
    expect(plan(parkAsInDoubt('b'))).toBeUndefined();
  });

  it('refuses a target that cannot exist', () => {
    const fault: Fault = { kind: 'hang' };
    expect(() => targetedFaultPlan({ match: writesInDoubt, fault, nth: 0 })).toThrow(FaultPlanError);
    expect(() => targetedFaultPlan({ match: writesInDoubt, fault, times: 0 })).toThrow(FaultPlanError);
  });
});

describe('subjectFaultPlan', () => {
  const keys = Array.from({ length: 400 }, (_, i) => `k-${i}`);
  /** A write naming the records `ids`: one, or a group's joint write naming several. */
  const write = (...ids: string[]): Omit<ChaosRequest, 'ordinal'> => ({
    service: 'dynamodb',
    operation: 'TransactWriteItems',
    body: { TransactItems: ids.map((id) => ({ Put: { Item: { id: { S: id } } } })) },
  });
  const subjects = (request: ChaosRequest) =>
    ((request.body.TransactItems as { Put: { Item: { id: { S: string } } } }[] | undefined) ?? []).map(
      (item) => item.Put.Item.id.S,
    );
  const plan = () => subjectFaultPlan({ seed: 5, rates: RATES, subjects });
  /** The faults injected by kind, and the faults drawn that no request met. */
  const faultsOf = (requests: Omit<ChaosRequest, 'ordinal'>[]) => {
    const decide = plan();
    const kinds: Record<string, number> = {};
    requests.forEach((request, i) => {
      const fault = decide({ ...request, ordinal: i + 1 });
      if (fault) kinds[fault.kind] = (kinds[fault.kind] ?? 0) + 1;
    });
    return { kinds, pending: decide.pending() };
  };

  it('injects the same faults, kind by kind, however the requests interleave, repeat or join', () => {
    const once = keys.map((key) => write(key));
    // Another run: retries, a batch brought back, and joint writes naming two or three records
    // first, each followed by a retry naming the same records, as a faulted request's retry does.
    const joint = shuffled(keys, 3).flatMap((key, i, all) =>
      i % 3 === 0 ? [write(key, ...all.slice(i + 1, i + 3)), write(key, ...all.slice(i + 1, i + 3))] : [],
    );
    const retried = [...joint, ...joint, ...shuffled([...once, ...once], 9)];
    const first = faultsOf(once);
    expect(Object.values(first.kinds).reduce((sum, n) => sum + n, 0)).toBeGreaterThan(20);
    expect(first.pending).toBe(0);
    expect(faultsOf(retried)).toEqual(first);
  });

  it('gives a joint write one fault, and the other record’s fault to the next write naming it', () => {
    const [a, b] = keys.filter((key) => Object.keys(faultsOf([write(key)]).kinds).length > 0);
    if (a === undefined || b === undefined) throw new Error('expected two records that draw a fault');
    const decide = plan();
    expect(decide({ ...write(a, b), ordinal: 1 })).toBeDefined();
    expect(decide.pending()).toBe(1);
    expect(decide({ ...write(a, b), ordinal: 2 })).toBeDefined();
    expect(decide.pending()).toBe(0);
    expect(decide({ ...write(a, b), ordinal: 3 })).toBeUndefined();
  });

  it('spares a request that names no subject', () => {
    const poll = { service: 'sqs', operation: 'GetQueueAttributes', body: { QueueUrl: 'q' } } as const;
    expect(faultsOf(Array.from({ length: 200 }, () => poll))).toEqual({ kinds: {}, pending: 0 });
  });
});

describe('combinePlans', () => {
  it("takes the first plan's fault, and lets every plan count every request", () => {
    const target = targetedFaultPlan({ match: () => true, fault: { kind: 'hang' }, nth: 2 });
    const plan = combinePlans(
      targetedFaultPlan({ match: () => true, fault: { kind: 'throttle' }, times: 1 }),
      target,
    );

    expect(plan({ ...putItem('a'), ordinal: 1 })).toEqual({ kind: 'throttle' });
    expect(plan({ ...putItem('a'), ordinal: 2 })).toBeUndefined();
    // The second plan saw `a` too, so `b` is its second distinct request.
    expect(plan({ ...putItem('b'), ordinal: 3 })).toEqual({ kind: 'hang' });
  });
});

import type { UnansweredWatcher } from '../harness/fault-proxy.js';
import type { ChaosRequest, Fault, FaultPlan, JsonObject } from '../harness/faults.js';
import { fnv1a32, mulberry32 } from '../harness/hash.js';
import { seededFaultPlan } from '../harness/seeded-plan.js';
import type { OutboxFaultProfile } from './outbox-schedule.js';
import type { SendLog } from './outbox-sends.js';

/** What reaches SQS past the proxy: everything but a request answered with a refusal instead. */
const REFUSALS: ReadonlySet<Fault['kind']> = new Set(['fail-before', 'throttle', 'hang']);

/**
 * The plan one outbox schedule's proxies follow: the seeded faults (switched off for the drain) and
 * SQS refusing every send while it is down. Whatever the faults, it logs each message entry that
 * reached SQS, by deduplication id, and whether its answer was lost: by a `lose-answer` fault, or
 * by the proxy's own connection to SQS failing (`unanswered`); an entry failed by `fail-entry`
 * never reaches it.
 */
export class OutboxTraffic {
  /** Seeded faults on (the steps) or off (the drain). */
  faults = true;
  /** While true, every SendMessageBatch is refused before it reaches SQS. */
  sqsDown = false;
  /** While true, the producer's transactions are applied and every answer is lost. */
  loseWriteAnswers = false;
  /** Sends refused because SQS was down. */
  outageRefusals = 0;
  readonly plan: FaultPlan;
  /**
   * The proxy's word that a request it sent on got no answer from upstream (a reset socket): the
   * sender saw none, and sends its entries again — a lost answer no fault decided.
   */
  readonly unanswered: UnansweredWatcher;
  readonly #tokenCheck: FaultPlan;

  constructor(profile: OutboxFaultProfile, runId: string, sends: SendLog) {
    const seeded = seededFaultPlan({ seed: profile.seed, rates: profile.rates });
    this.#tokenCheck = tokenCheckPlan(profile);
    this.plan = (request) => {
      const fault = this.#decide(request, seeded, runId);
      if (request.operation === 'SendMessageBatch' && !(fault && REFUSALS.has(fault.kind))) {
        for (const id of forwardedIds(request, fault)) sends.arrived(id, fault?.kind === 'lose-answer');
      }
      return fault;
    };
    this.unanswered = (request, fault) => {
      if (request.operation === 'SendMessageBatch')
        sends.explain(forwardedIds(request, fault), 'lost-answer');
    };
  }

  #decide(request: ChaosRequest, seeded: FaultPlan, runId: string): Fault | undefined {
    if (this.sqsDown && request.operation === 'SendMessageBatch') {
      this.outageRefusals++;
      return { kind: 'fail-before' };
    }
    if (!this.faults) return undefined;
    if (this.loseWriteAnswers && request.operation === 'TransactWriteItems') return { kind: 'lose-answer' };
    return this.#tokenCheck(request) ?? seeded({ ...request, body: fingerprintBody(request.body, runId) });
  }
}

/**
 * The faults of the outbox's token check (a retried write reading its messages back): its
 * BatchGetItems, the producer's alone and one at a time, draw in turn from the schedule's seed.
 */
function tokenCheckPlan(profile: OutboxFaultProfile): FaultPlan {
  const unprocessed = profile.tokenCheck?.['unprocessed-keys'] ?? 0;
  const throttle = profile.tokenCheck?.throttle ?? 0;
  let reads = 0;
  return (request) => {
    if (request.operation !== 'BatchGetItem') return undefined;
    const draw = mulberry32(fnv1a32(`${profile.seed}\u0000token-check\u0000${++reads}`))();
    if (draw < unprocessed) return { kind: 'unprocessed-keys' };
    return draw < unprocessed + throttle ? { kind: 'throttle' } : undefined;
  };
}

/** The deduplication ids of a SendMessageBatch's entries the proxy sends on: all but one failed by `fail-entry`. */
function forwardedIds(request: ChaosRequest, fault: Fault | undefined): string[] {
  const entries = Array.isArray(request.body.Entries) ? (request.body.Entries as JsonObject[]) : [];
  const failed = fault?.kind === 'fail-entry' ? fault.entry : -1;
  return entries.flatMap((entry, index) => (index === failed ? [] : [String(entry.MessageDeduplicationId)]));
}

/**
 * The body the seeded plan fingerprints: without the run's id, so a schedule meets the same faults
 * whenever it runs; with each transaction Put's table key and a Query's key values, so the outbox's
 * writes and listings of different items and groups draw their faults apart.
 */
function fingerprintBody(body: JsonObject, runId: string): JsonObject {
  const plain = JSON.parse(JSON.stringify(body).replaceAll(runId, 'S')) as JsonObject;
  if (Array.isArray(plain.TransactItems)) {
    plain.TransactItems = (plain.TransactItems as JsonObject[]).map((entry) => {
      const put = entry.Put as { Item?: JsonObject } | undefined;
      return put ? { Put: { ...put, Key: { pk: put.Item?.pk, sk: put.Item?.sk } } } : entry;
    });
  }
  if (plain.KeyConditionExpression !== undefined) plain.Key = plain.ExpressionAttributeValues;
  return plain;
}

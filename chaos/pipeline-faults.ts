import { combinePlans } from '../harness/combine-plans.js';
import type { FirstAnswer } from '../harness/email-gateway.js';
import { type ChaosRequest, type FaultPlan, FaultPlanError } from '../harness/faults.js';
import { fnv1a32 } from '../harness/hash.js';
import { targetedFaultPlan } from '../harness/targeted-plan.js';
import { LEDGER_NAMESPACE } from '../lambdas/shop/consumer/ledger.js';
import { NOTIFICATIONS_NAMESPACE } from '../lambdas/shop/consumer/notifications.js';
import { firstTryFaultPlan } from './first-try-plan.js';

/*
 * The faults of the pipeline run, each drawn from the seed and the message a request first names
 * (issue 40): retries and redeliveries, as many as the run's timing makes, add none.
 */

const RATES = { 'fail-before': 0.04, 'lose-answer': 0.04, throttle: 0.02 };

/** How the e-mail gateway answers a notification's first attempt: 10% 503, 6% send then hang. */
export function gatewayAnswer(seed: number, key: string): FirstAnswer {
  const draw = fnv1a32(`${seed}:${key}`) % 100;
  return draw < 10 ? 'unavailable' : draw < 16 ? 'send-then-hang' : 'accept';
}

/**
 * The functions' DynamoDB requests: seeded faults on the first request that names each message's
 * idempotency record (its transaction, its acquire), and two crashes: one notification's acquire, and another's
 * completion, hang until the consumer times out (its worker is terminated); both notifications
 * are picked by the seed, the second among those the gateway accepts at once, so that its
 * completion is written.
 */
export function pipelineDynamoDbPlan(seed: number, notificationKeys: readonly string[]): FaultPlan {
  const [acquired, completed] = hangTargets(seed, notificationKeys);
  const names = (request: ChaosRequest, key: string) =>
    body(request).includes(`"${NOTIFICATIONS_NAMESPACE}#${key}"`);
  return combinePlans(
    targetedFaultPlan({
      match: (r) => r.operation === 'UpdateItem' && body(r).includes(':inProgress') && names(r, acquired),
      times: 1,
      fault: { kind: 'hang' },
    }),
    targetedFaultPlan({
      match: (r) => r.operation === 'UpdateItem' && body(r).includes('"COMPLETED"') && names(r, completed),
      times: 1,
      fault: { kind: 'hang' },
    }),
    firstTryFaultPlan({ seed, rates: RATES, subjects: recordWritten }),
  );
}

/**
 * The functions' SQS requests: seeded faults on the first send of each message (the publisher's
 * first batches, whose entries the workload fixes; the DLQ's). A receipt handle's request (delete,
 * change visibility) or a schedule's poll names no message, and comes as often as timing makes it.
 */
export function pipelineSqsPlan(seed: number): FaultPlan {
  return firstTryFaultPlan({ seed, rates: RATES, subjects: sentMessages });
}

const body = (request: ChaosRequest) => JSON.stringify(request.body);

/**
 * The one record a write names. A read names the records its batch happened to hold (a lookup of
 * one record or of ten), and so does a write naming two, or one twice (a group's joint acquire, a
 * copy in its original's batch): they are left to the records' own writes.
 */
function recordWritten(request: ChaosRequest): string[] {
  if (!WRITES.includes(request.operation)) return [];
  const entries = recordEntries(request);
  return entries.length === 1 ? entries : [];
}

const WRITES = ['TransactWriteItems', 'UpdateItem', 'PutItem', 'DeleteItem'];

/** The idempotency records a DynamoDB request names (`Key`, `Item` or a transaction's items), as often as named. */
function recordEntries(request: ChaosRequest): string[] {
  const pattern = new RegExp(
    `"id":\\{"S":"((?:${LEDGER_NAMESPACE}|${NOTIFICATIONS_NAMESPACE})#[^"]*)"\\}`,
    'g',
  );
  return Array.from(body(request).matchAll(pattern), (match) => match[1] as string);
}

/** The messages an SQS send carries, by queue and deduplication id. */
function sentMessages(request: ChaosRequest): string[] {
  const queue = String(request.body.QueueUrl ?? '')
    .split('/')
    .pop();
  const entries = Array.isArray(request.body.Entries) ? request.body.Entries : [request.body];
  return entries.flatMap((entry) => {
    const dedupId = (entry as { MessageDeduplicationId?: unknown }).MessageDeduplicationId;
    return typeof dedupId === 'string' ? [`${queue}:${dedupId}`] : [];
  });
}

/** Two distinct notifications picked by the seed; the second one's first send is accepted. */
function hangTargets(seed: number, keys: readonly string[]): [string, string] {
  const accepted = keys.filter((key) => gatewayAnswer(seed, key) === 'accept');
  const completed = accepted[fnv1a32(`${seed}:completion`) % accepted.length];
  const others = keys.filter((key) => key !== completed);
  const acquired = others[fnv1a32(`${seed}:acquire`) % others.length];
  if (acquired === undefined || completed === undefined)
    throw new FaultPlanError('the workload needs two notifications, one the gateway accepts at once');
  return [acquired, completed];
}

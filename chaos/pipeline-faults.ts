import { combinePlans } from '../harness/combine-plans.js';
import type { FirstAnswer } from '../harness/email-gateway.js';
import { type ChaosRequest, type FaultPlan, FaultPlanError } from '../harness/faults.js';
import { fnv1a32 } from '../harness/hash.js';
import { targetedFaultPlan } from '../harness/targeted-plan.js';
import { InvalidEnvelopeError, parseReceivedEnvelope } from '../lambdas/common/envelope.js';
import { LEDGER_NAMESPACE } from '../lambdas/shop/consumer/ledger.js';
import { NOTIFICATIONS_NAMESPACE } from '../lambdas/shop/consumer/notifications.js';
import { subjectFaultPlan } from './subject-fault-plan.js';

/*
 * The faults of the pipeline run, each drawn from the seed and a message (issue 40, item 18):
 * retries and redeliveries, as many as the run's timing makes, add none, and move none.
 */

/** A plan, and the faults it drew that no request met yet (0 once a run met them all). */
export type PipelinePlan = FaultPlan & { readonly pending: () => number };

const RATES = { 'fail-before': 0.04, 'lose-answer': 0.04, throttle: 0.02 };

/** How the e-mail gateway answers a notification's first attempt: 10% 503, 6% send then hang. */
export function gatewayAnswer(seed: number, key: string): FirstAnswer {
  const draw = fnv1a32(`${seed}:${key}`) % 100;
  return draw < 10 ? 'unavailable' : draw < 16 ? 'send-then-hang' : 'accept';
}

/**
 * The functions' DynamoDB requests: a seeded fault for each message's idempotency record that
 * draws one, on a write naming that record (its transaction, its acquire, a retry of them), and
 * two crashes: one notification's acquire, and another's completion, hang until the consumer
 * times out (its worker is terminated); both notifications are picked by the seed, the second
 * among those the gateway accepts at once, so that its completion is written.
 */
export function pipelineDynamoDbPlan(seed: number, notificationKeys: readonly string[]): PipelinePlan {
  const [acquired, completed] = hangTargets(seed, notificationKeys);
  const names = (request: ChaosRequest, key: string) =>
    body(request).includes(`"${NOTIFICATIONS_NAMESPACE}#${key}"`);
  const seeded = subjectFaultPlan({ seed, rates: RATES, subjects: recordsWritten });
  const plan = combinePlans(
    targetedFaultPlan({
      match: (r) => isAcquire(r) && names(r, acquired),
      times: 1,
      fault: { kind: 'hang' },
    }),
    targetedFaultPlan({
      match: (r) => r.operation === 'UpdateItem' && body(r).includes('"COMPLETED"') && names(r, completed),
      times: 1,
      fault: { kind: 'hang' },
    }),
    seeded,
  );
  return Object.assign(plan, { pending: seeded.pending });
}

/**
 * The functions' SQS requests: a seeded fault for each message sent that draws one (to the queue
 * by the publisher, to the DLQ by the consumer), on a send of it. A receipt handle's request
 * (delete, change visibility) or a schedule's poll names no message, and meets none.
 */
export function pipelineSqsPlan(seed: number): PipelinePlan {
  return subjectFaultPlan({ seed, rates: RATES, subjects: sentMessages });
}

const body = (request: ChaosRequest) => JSON.stringify(request.body);

/** An acquire's write (DESIGN §3): the PutItem that creates the record, or the UpdateItem that takes it. */
const isAcquire = (request: ChaosRequest) =>
  (request.operation === 'PutItem' && body(request).includes('"IN_PROGRESS"')) ||
  (request.operation === 'UpdateItem' &&
    String(request.body.UpdateExpression).startsWith('SET #status = :inProgress'));

/** The records a write names, each once. A read meets no fault: it decides nothing by itself. */
function recordsWritten(request: ChaosRequest): string[] {
  return WRITES.includes(request.operation) ? [...new Set(recordEntries(request))] : [];
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

/**
 * The messages an SQS send carries, by queue and the envelope's key: the same in every run, where a
 * DLQ copy's deduplication id is not (the consumer derives it from SQS's message id).
 */
function sentMessages(request: ChaosRequest): string[] {
  const queue = String(request.body.QueueUrl ?? '')
    .split('/')
    .pop();
  const entries = Array.isArray(request.body.Entries) ? request.body.Entries : [request.body];
  return entries.flatMap((entry) => {
    const key = envelopeKey((entry as { MessageBody?: unknown }).MessageBody);
    return key === undefined ? [] : [`${queue}:${key}`];
  });
}

/** The key of the envelope `body` is, or undefined: not an envelope, or one without a key. */
function envelopeKey(body: unknown): string | undefined {
  try {
    return typeof body === 'string' ? parseReceivedEnvelope(body).key : undefined;
  } catch (error) {
    if (error instanceof InvalidEnvelopeError) return undefined;
    throw error;
  }
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

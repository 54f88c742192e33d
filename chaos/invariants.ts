import type { ScheduleRun } from './run-schedule.js';
import type { CrashMark } from './schedule.js';

/** One broken promise of DESIGN §11, for one key. */
export interface Violation {
  key: string;
  rule:
    | 'lost'
    | 'effect-twice'
    | 'effect-missing'
    | 'order'
    | 'dead-lettered-twice'
    | 'needless-in-doubt'
    | 'copy-not-acknowledged'
    | 'unknown-became-certain'
    | 'certain-but-on-queue';
  detail: string;
}

export interface ScheduleVerdict {
  violations: Violation[];
  /** Keys checked: the accepted messages. */
  keysChecked: number;
  /** IN_DOUBT records whose effect never started. */
  needlessInDoubt: number;
  /**
   * Of those, the ones neither a crash between a write that let the effect start (an acquire as
   * started, a start mark) and the effect explains, nor the residue of DESIGN §3 and §4.1 (such a
   * lease whose give-back failed on every try), also listed as violations: should be none. A lease
   * taken ahead of its turn and never marked started must be taken over, never parked.
   */
  unexplainedNeedlessInDoubt: number;
}

/**
 * DESIGN §11's invariants, per key: every accepted message ends COMPLETED, IN_DOUBT or in the DLQ;
 * its effect happened once (transactional, at-most-once: never twice; at-least-once: twice only
 * after a crash inside or after the effect, or an unknown outcome); effects apply in group order
 * (FIFO queues only);
 * a message the consumer dead-lettered is in the DLQ once. Also counts needless IN_DOUBTs.
 */
export function checkInvariants(run: ScheduleRun): ScheduleVerdict {
  const violations: Violation[] = [];
  const { outcome, ledger } = run;
  let keysChecked = 0;
  let needlessInDoubt = 0;
  let unexplainedNeedlessInDoubt = 0;
  const txApplied = new Map<string, number>();
  for (const order of outcome.transactionalOrder.values()) {
    for (const key of order) txApplied.set(key, (txApplied.get(key) ?? 0) + 1);
  }

  run.keys.forEach((key, index) => {
    const message = run.schedule.messages[index];
    if (!message) return;
    const accepted = run.sent.has(key) || run.received.has(key);
    const record = outcome.records.get(key);
    const deadLetters = outcome.deadLetters.get(key) ?? [];
    const applied =
      message.operation === 'transactional' ? (txApplied.get(key) ?? 0) : (ledger.applied.get(key) ?? 0);
    const crashes = run.crashed.get(key) ?? new Set();
    const add = (rule: Violation['rule'], detail: string) => violations.push({ key, rule, detail });

    if (accepted) {
      keysChecked++;
      const settled =
        record?.status === 'COMPLETED' || record?.status === 'IN_DOUBT' || deadLetters.length > 0;
      if (!settled) add('lost', `record ${record?.status ?? 'absent'}, not in the DLQ`);
      if (record?.status === 'REJECTED' && deadLetters.length === 0)
        add('lost', 'REJECTED but not in the DLQ');
    }
    if (record?.status === 'COMPLETED' && applied === 0)
      add('effect-missing', 'COMPLETED without its effect');
    if (applied > 1) {
      const mayRepeat =
        (message.operation === 'at-least-once' &&
          (AFTER_EFFECT_CRASH_MARKS.some((mark) => crashes.has(mark)) ||
            message.behaviour === 'unknown-once' ||
            run.unrecordedCompletions.has(key))) ||
        // DESIGN §2's residue, in every mode: a redriven copy whose record could not be kept.
        (run.recordsNotKept.has(key) && run.resent.has(key));
      if (!mayRepeat) add('effect-twice', `${message.operation} effect applied ${applied} times`);
    }
    if (run.schedule.queueType === 'standard') checkStandardDeadLetters(run, key, add);
    else if (deadLetters.length > 1 && !run.resent.has(key)) {
      add('dead-lettered-twice', `${deadLetters.length} copies in the DLQ: ${deadLetters.join(', ')}`);
    }
    if (
      record?.status === 'IN_DOUBT' &&
      message.operation !== 'transactional' &&
      (ledger.started.get(key) ?? 0) === 0
    ) {
      needlessInDoubt++;
      const crashedAfterStart = STARTED_CRASH_MARKS.some((mark) => crashes.has(mark));
      const explained = (crashedAfterStart && run.startsSent.has(key)) || run.startedNotGivenBack.has(key);
      if (!explained) {
        unexplainedNeedlessInDoubt++;
        add(
          'needless-in-doubt',
          `IN_DOUBT (${record.error?.name}) though its effect never started and no crash after a start ` +
            `write explains it (start write sent: ${run.startsSent.has(key)})`,
        );
      }
    }
  });

  checkPublication(run, violations);
  checkCopies(run, violations);
  // A standard queue promises no order (DESIGN §5.1).
  if (run.schedule.queueType !== 'standard') checkOrder(run, violations);
  return { violations, keysChecked, needlessInDoubt, unexplainedNeedlessInDoubt };
}

/**
 * On a standard queue one key may be several messages (a publish retried after a lost answer, a
 * copy SQS delivers again), each dead-lettered in its turn (DESIGN §5.1). What must hold is per
 * message: the consumer sends it to the DLQ once, or again only when its send's answer was lost
 * (a standard DLQ does not deduplicate the retry) or the message came back without its `sent`
 * mark: the mark's write failed on every try, or an invocation died with the key in its batch
 * (between the send and the mark, DESIGN §5's residue, which a standard DLQ does not narrow to 5
 * minutes). Two invocations receiving it at once explain nothing: the claim before the send lets
 * one of them send it (issue 40).
 */
function checkStandardDeadLetters(
  run: ScheduleRun,
  key: string,
  add: (rule: Violation['rule'], detail: string) => void,
): void {
  const copies = new Map<string, number>();
  for (const origin of run.outcome.deadLetterOrigins.get(key) ?? []) {
    // A message SQS moved after its last receive carries no origin; SQS moves a message once.
    if (origin !== undefined) copies.set(origin, (copies.get(origin) ?? 0) + 1);
  }
  for (const [origin, n] of copies) {
    const explained =
      run.deadLetterAnswersLost.has(origin) ||
      run.deadLetterMarksNotWritten.has(origin) ||
      run.crashed.has(key);
    if (n > 1 && !explained)
      add(
        'dead-lettered-twice',
        `message ${origin}: ${n} copies in the DLQ, though no send of it lost its answer, its mark was written and no invocation died with it`,
      );
  }
}

/**
 * The crash marks that can fall after a record's effect and before its record says so. The points
 * about the next record's lease belong here too: the next lease is taken ahead, concurrently with
 * the target's own acquire and effect, and an at-least-once completion is written while the next
 * record runs.
 */
const AFTER_EFFECT_CRASH_MARKS: readonly CrashMark[] = [
  'inside-effect',
  'before-record',
  'after-ahead-acquire',
  'after-start-mark',
  'in-flight',
];

/**
 * The crash marks that can fall between a write that let an effect start and the effect: the target's
 * own points after its lease or the next record's lease was taken or marked, or `in-flight` for the
 * batch's other records. Dying before any acquire, inside the effect or after the answer cannot.
 */
const STARTED_CRASH_MARKS: readonly CrashMark[] = [
  'after-acquire',
  'after-ahead-acquire',
  'after-completion',
  'after-start-mark',
  'in-flight',
];

/**
 * What the publish answered is true (issues 30 and 42). A message a response of a call called
 * `unknown` may be on the queue: that call never ends it `failed` (certainly not on the queue) or
 * `blocked`. And a message on the queue — received, and not put there by a later step — is not
 * `failed` or `blocked` in what the last call answered (calls one after the other: it saw all
 * the earlier ones could do), nor, for calls at once, in what every call answered (each answers
 * for its own requests, and one may send after the other answered).
 */
function checkPublication(run: ScheduleRun, violations: Violation[]): void {
  const { finals, reportedUnknown } = run.publication;
  const concurrent = run.schedule.publishRounds?.repeat === 'concurrent';
  // Calls at once share one set of responses: which call a response belonged to is not known.
  if (!concurrent) {
    reportedUnknown.forEach((keys, call) => {
      for (const key of keys) {
        const status = finals[call]?.get(key);
        if (certain(status)) {
          violations.push({
            key,
            rule: 'unknown-became-certain',
            detail: `a response called it unknown, the publish ended it ${status}`,
          });
        }
      }
    });
  }
  const putLater = new Set(run.resent);
  for (const step of run.schedule.steps) {
    if (step.kind === 'republish' || step.kind === 'late-republication')
      putLater.add(run.keys[step.index] ?? '');
  }
  for (const key of run.received) {
    if (putLater.has(key)) continue;
    if (refusedByPublish(run, key)) {
      violations.push({
        key,
        rule: 'certain-but-on-queue',
        detail: `it reached the queue, and the publish answered ${finals.map((final) => final.get(key)).join(', ')}`,
      });
    }
  }
}

/**
 * A copy right behind its original is a duplicate at its turn (DESIGN §4): when its invocation
 * acknowledged the original, it acknowledges the copy too, not fail it as held elsewhere and bring
 * its group back a visibility timeout later. A copy that goes to the DLQ as its original did (a
 * poison message, one past the dedup horizon) is left out: its own send to the DLQ may fault.
 */
function checkCopies(run: ScheduleRun, violations: Violation[]): void {
  for (const { key, original, copy } of run.copiesBehind) {
    const message = run.schedule.messages[run.keys.indexOf(key)];
    const deadLettered =
      message?.behaviour === 'poison' || (run.outcome.deadLetters.get(key)?.length ?? 0) > 0;
    if (original && !copy && !deadLettered) {
      violations.push({
        key,
        rule: 'copy-not-acknowledged',
        detail: 'a copy right behind its acknowledged original failed in the same delivery',
      });
    }
  }
}

/**
 * Within a group, effects apply in publish order: the order the messages were accepted. Messages
 * that went through the DLQ or came again after the window may come back behind later ones by
 * design, so they are left out; so is a message whose place is not known (`acceptancePositions`).
 */
function checkOrder(run: ScheduleRun, violations: Violation[]): void {
  const position = acceptancePositions(run);
  const inOrder = (group: string, applied: string[]) => {
    const considered = applied.filter(
      (key) => position.has(key) && !run.resent.has(key) && !(run.outcome.deadLetters.get(key)?.length ?? 0),
    );
    const firsts = considered.filter((key, index) => considered.indexOf(key) === index);
    for (let i = 1; i < firsts.length; i++) {
      const [before, after] = [firsts[i - 1] as string, firsts[i] as string];
      if ((position.get(before) ?? 0) > (position.get(after) ?? 0)) {
        violations.push({ key: after, rule: 'order', detail: `${group}: ${after} applied after ${before}` });
      }
    }
  };
  for (const [group, applied] of run.outcome.transactionalOrder) inOrder(group, applied);
  for (const [group, applied] of run.ledger.orderByGroup) inOrder(group, applied);
}

/**
 * Each key's place in the order of acceptance, where it is known. The schedule's publish accepts
 * its messages in schedule order. One it answered `failed` or `blocked` (certainly not on the
 * queue) is accepted by the first `republish` step that may have sent it, behind all of them: a
 * producer may republish a group's refused messages in any order (found by CI, seed 304056833).
 * Where two sends may each have placed a key (an `unknown` answer, or a publish that threw, and a
 * later send of it), its place is not known.
 */
export function acceptancePositions(run: ScheduleRun): Map<string, number> {
  const position = new Map(run.keys.map((key, index) => [key, index]));
  const { finals } = run.publication;
  const sent = (key: string) => finals.some((final) => final.get(key) === 'sent');
  for (const key of new Set(run.republished.map(({ key }) => key))) {
    if (sent(key)) continue;
    position.delete(key);
    if (!refusedByPublish(run, key)) continue;
    const placing = run.republished.flatMap(({ key: each, status }, order) =>
      each === key && !certain(status) ? [{ status, order }] : [],
    );
    const [first] = placing;
    if (first && (first.status === 'sent' || placing.length === 1))
      position.set(key, run.keys.length + first.order);
  }
  return position;
}

/** `failed` or `blocked`: what the publisher answers only for a message certainly not on the queue. */
const certain = (status: string | undefined) => status === 'failed' || status === 'blocked';

/**
 * Whether the schedule's publish put `key` certainly not on the queue: in what the last call
 * answered (calls one after the other: it saw all the earlier ones could do), or, for calls at
 * once, in what every call answered (each answers for its own requests).
 */
function refusedByPublish(run: ScheduleRun, key: string): boolean {
  const { finals } = run.publication;
  if (finals.length === 0) return false;
  return run.schedule.publishRounds?.repeat === 'concurrent'
    ? finals.every((final) => certain(final.get(key)))
    : certain(finals.at(-1)?.get(key));
}

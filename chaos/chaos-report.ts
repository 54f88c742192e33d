import type { OperatorCheckReport } from './check-operator-schedules.js';
import type { OutboxCheckReport } from './check-outbox-schedules.js';
import type { ScheduleCheckReport } from './check-schedules.js';
import type { ValkeyCheckReport, ValkeyTally } from './check-valkey-schedules.js';
import { unexpectedDeadLetters } from './dead-letter-causes.js';
import { SENDER_CLOCK_SKEW_MS } from './outbox-schedule.js';
import type { PipelineChaosReport } from './pipeline-run.js';
import { CONSUMER_CLOCK_SKEW_MS } from './schedule.js';
import { VALKEY_FAULT_KINDS } from './valkey-schedule.js';

export interface ChaosRun {
  date: string;
  machine: string;
  schedules: ScheduleCheckReport;
  pipeline: PipelineChaosReport;
  outbox?: OutboxCheckReport;
  /** The standard-queue schedules (issue 32). */
  standard?: ScheduleCheckReport;
  /** The operator's commands' schedules (issue 42). */
  operator?: OperatorCheckReport;
  /** The Valkey store's losses (issue 46). */
  valkey?: ValkeyCheckReport;
}

/** Whether the run kept every promise: no violation, and no IN_DOUBT that no crash explains. */
export function chaosPassed(run: {
  schedules: ScheduleCheckReport;
  pipeline?: PipelineChaosReport;
  outbox?: OutboxCheckReport;
  standard?: ScheduleCheckReport;
  operator?: OperatorCheckReport;
  valkey?: ValkeyCheckReport;
}): boolean {
  const { schedules, pipeline, outbox, standard, operator, valkey } = run;
  const outboxPassed = !outbox || (outbox.violations === 0 && !outbox.counterexample);
  const operatorPassed = !operator || (operator.violations === 0 && !operator.counterexample);
  const valkeyPassed = !valkey || (valkey.violations === 0 && !valkey.counterexample);
  const schedulesPassed = (report: ScheduleCheckReport) =>
    report.violations === 0 && report.unexplainedNeedlessInDoubt === 0 && !report.counterexample;
  return (
    schedulesPassed(schedules) &&
    (!standard || schedulesPassed(standard)) &&
    (!pipeline || pipelinePassed(pipeline)) &&
    outboxPassed &&
    operatorPassed &&
    valkeyPassed
  );
}

/**
 * Whether the pipeline run kept every promise, its DLQ holds only the intended poison messages, and
 * its seed gave one set of faults: every fault drawn was met, as many in a second run if one ran.
 */
export function pipelinePassed(pipeline: PipelineChaosReport): boolean {
  return (
    pipeline.violations.length === 0 &&
    pipeline.needlessInDoubt === 0 &&
    unexpectedDeadLetters(pipeline.deadLetterCauses) === 0 &&
    pipeline.faultsNotMet === 0 &&
    (!pipeline.rerunFaults || counts(pipeline.rerunFaults) === counts(pipeline.faults))
  );
}

/** The figures of a run as Markdown: what `npm run chaos` writes to bench/CHAOS.md. */
export function chaosMarkdown(run: ChaosRun): string {
  const { schedules: s, pipeline: p } = run;
  const kinds = (faults: Record<string, number>) =>
    Object.entries(faults)
      .filter(([, n]) => n > 0)
      .map(([kind, n]) => `${kind} ${n.toLocaleString('en')}`)
      .join(', ');
  const lines = [
    '# Fault schedules',
    '',
    `Written by \`npm run chaos\` on ${run.date} (${run.machine}). ${chaosPassed(run) ? '**0 violations.**' : '**VIOLATIONS FOUND.**'}`,
    'What is injected and checked: [docs/faults.md](../docs/faults.md).',
    '',
    '## Generated schedules',
    '',
    ...scheduleRows(s, {
      afterSteps: [
        `| publishes with round faults (issues 30, 42), by what their first request and re-send rounds met, and their repeat call | ${kinds(s.publishRounds)} |`,
      ],
    }),
    '',
    ...pipelineMarkdown(p),
  ];
  if (run.outbox) lines.push('', ...outboxMarkdown(run.outbox));
  if (run.standard) lines.push('', ...standardMarkdown(run.standard));
  if (run.operator) lines.push('', ...operatorMarkdown(run.operator));
  if (run.valkey) lines.push('', ...valkeyMarkdown(run.valkey));
  if (s.counterexample) {
    lines.push(
      '',
      '## Counterexample',
      '',
      `Replay: \`npm run chaos -- --seed ${s.counterexample.seed} --path ${s.counterexample.path} --workers 1 --schedules 1 --no-pipeline\``,
      '',
      '```json',
      JSON.stringify(s.counterexample, null, 2),
      '```',
    );
  }
  return `${lines.join('\n')}\n`;
}

const PIPELINE_HEADING = '## The whole pipeline in the sandbox';

/**
 * `markdown` (a bench/CHAOS.md) with its pipeline section replaced by `run`'s, or appended: what
 * `npm run chaos -- --pipeline-only` writes, the schedules' sections kept as their run left them.
 */
export function withPipelineSection(
  markdown: string,
  run: { date: string; machine: string; pipeline: PipelineChaosReport },
): string {
  const section = [
    ...pipelineMarkdown(run.pipeline),
    '',
    `Run alone by \`npm run chaos -- --pipeline-only\` on ${run.date} (${run.machine}): ${pipelinePassed(run.pipeline) ? '**0 violations.**' : '**VIOLATIONS FOUND.**'}`,
  ].join('\n');
  const start = markdown.indexOf(PIPELINE_HEADING);
  if (start === -1) return `${markdown.trimEnd()}\n\n${section}\n`;
  const next = markdown.indexOf('\n## ', start + PIPELINE_HEADING.length);
  const end = next === -1 ? markdown.length : next;
  return `${markdown.slice(0, start)}${section}\n${markdown.slice(end)}`;
}

/** The pipeline run's section: its table, then any violation and any unexpected DLQ copy. */
function pipelineMarkdown(p: PipelineChaosReport): string[] {
  const causes = p.deadLetterCauses;
  const lines = [
    PIPELINE_HEADING,
    '',
    "The seed fixes the workload, the e-mail gateway's answers and the faults injected (each message draws",
    "its own); which invocations die of the consumer's timeout on a loaded machine, and so the IN_DOUBT",
    'records and the time, depend on timing (docs/faults.md).',
    '',
    '| figure | value |',
    '|---|---|',
    `| messages published | ${p.published} (seed ${p.seed}) |`,
    `| faults injected | ${counts(p.faults)} |`,
    `| faults drawn that no request met | ${p.faultsNotMet} |`,
    ...(p.rerunFaults
      ? [
          `| the same seed run again: faults injected | ${counts(p.rerunFaults)}: ${counts(p.rerunFaults) === counts(p.faults) ? 'the same' : 'DIFFERENT'} |`,
        ]
      : []),
    `| invocations that died (timeouts holding a request) | ${p.crashes} |`,
    `| keys checked | ${p.keysChecked} |`,
    `| in the DLQ | ${p.deadLettered} (${counts(Object.fromEntries(Object.entries(p.deadLetterReasons).sort()))}) |`,
    `| in the DLQ by cause | intended poison ${causes.intended}, a business rule broken unmeant ${causes.businessRule.length}, other ${causes.other.length} |`,
    `| IN_DOUBT | ${p.inDoubt}, needless: ${p.needlessInDoubt} |`,
    `| violations | ${p.violations.length} |`,
    `| time | ${(p.durationMs / 1000).toFixed(0)} s |`,
  ];
  if (p.violations.length > 0)
    lines.push('', '### Pipeline violations', '', ...p.violations.map((v) => `- ${v}`));
  const unexpected = [...causes.businessRule.map((key) => `${key}: a business rule`), ...causes.other];
  if (unexpected.length > 0)
    lines.push('', '### Unexpected in the DLQ', '', ...unexpected.map((entry) => `- ${entry}`));
  return lines;
}

/**
 * The table of a family of generated consumer schedules (FIFO's, the standard queue's), with the
 * family's own rows after the steps and after the crashes.
 */
function scheduleRows(
  s: ScheduleCheckReport,
  own: { afterSteps?: string[]; afterFaults?: string[]; afterCrashes?: string[] },
): string[] {
  return [
    '| figure | value |',
    '|---|---|',
    `| schedules | ${s.schedules.toLocaleString('en')} (fast-check seed ${s.seed}) |`,
    `| requests through the fault proxies | ${s.requests.toLocaleString('en')} |`,
    `| steps generated | ${counts(s.steps)} |`,
    ...(own.afterSteps ?? []),
    `| faults injected | ${counts(s.faults)} |`,
    ...(own.afterFaults ?? []),
    `| clocks | each consumer container's own, up to ${CONSUMER_CLOCK_SKEW_MS} ms ahead or behind |`,
    `| invocations crashed at a named step | ${s.crashes.toLocaleString('en')} |`,
    ...(own.afterCrashes ?? []),
    `| keys checked (accepted messages) | ${s.keysChecked.toLocaleString('en')} |`,
    `| violations | ${s.violations} |`,
    `| needless IN_DOUBT (effect never started) | ${s.needlessInDoubt}, all after a crash between acquire and effect, or a give-back failing after it (DESIGN §3, §4.1): ${s.unexplainedNeedlessInDoubt === 0 ? 'yes' : `no, ${s.unexplainedNeedlessInDoubt} unexplained`} |`,
    `| time | ${(s.durationMs / 1000).toFixed(0)} s |`,
  ];
}

/** Figures by kind, the nonzero ones: `kind n, kind n`, or `none`. */
function counts(figures: Record<string, number>): string {
  return (
    Object.entries(figures)
      .filter(([, n]) => n > 0)
      .map(([kind, n]) => `${kind} ${n.toLocaleString('en')}`)
      .join(', ') || 'none'
  );
}

/** The operator schedules' section of bench/CHAOS.md. */
function operatorMarkdown(o: OperatorCheckReport): string[] {
  const lines = [
    "## The operator's commands",
    '',
    '`dlq redrive`, `dlq discard` and `dlq list` on a FIFO DLQ (some messages past the dedup horizon), one at a',
    'time or two operators at once, under faults, the consumer running or not (issue 42; docs/faults.md).',
    '',
    '| figure | value |',
    '|---|---|',
    `| schedules | ${o.schedules.toLocaleString('en')} (fast-check seed ${o.seed}) |`,
    `| DLQ messages | ${o.messages.toLocaleString('en')} |`,
    `| steps with two operators at once | ${o.concurrentSteps.toLocaleString('en')} |`,
    `| how the commands ended | ${counts(o.endings)} |`,
    `| requests through the fault proxies | ${o.requests.toLocaleString('en')} |`,
    `| faults injected | ${counts(o.faults)} |`,
    `| violations | ${o.violations} |`,
    `| time | ${(o.durationMs / 1000).toFixed(0)} s |`,
  ];
  if (o.counterexample) lines.push('', `Counterexample: \`${JSON.stringify(o.counterexample)}\``);
  return lines;
}

function outboxMarkdown(o: OutboxCheckReport): string[] {
  const lines = [
    '## Outbox schedules',
    '',
    '| figure | value |',
    '|---|---|',
    `| schedules | ${o.schedules.toLocaleString('en')} (fast-check seed ${o.seed}) |`,
    `| writes | ${o.writes.committed.toLocaleString('en')} committed, ${o.writes.canceled.toLocaleString('en')} refused by their condition (canceled) |`,
    `| writes whose every call failed (three, one idempotency token) | ${o.writes.failedButCommitted} committed all the same, ${o.writes.failedUncommitted} did not |`,
    `| messages committed | ${o.messages.toLocaleString('en')} |`,
    `| requests through the fault proxies | ${o.requests.toLocaleString('en')} |`,
    `| steps generated | ${counts(o.steps)} |`,
    `| faults injected | ${counts(o.faults)} (fail-before includes the ${o.outageRefusals.toLocaleString('en')} sends refused while SQS was down) |`,
    `| clocks | each relay and sweeper invocation's own, up to ${SENDER_CLOCK_SKEW_MS} ms ahead or behind |`,
    `| relay and sweeper invocations crashed at a named point | ${o.crashes.toLocaleString('en')}; stalled past their claims: ${o.stalls.toLocaleString('en')} |`,
    `| messages that reached SQS more than once | ${o.duplicateSends.toLocaleString('en')}, explained by: ${counts(o.explained)} |`,
    `| violations | ${o.violations} |`,
    `| time | ${(o.durationMs / 1000).toFixed(0)} s |`,
  ];
  if (o.counterexample) {
    const { seed, path } = o.counterexample;
    const replay = `--seed ${seed} --outbox-path ${path} --workers 1 --schedules 0 --outbox-schedules 1 --no-pipeline`;
    lines.push('', ...counterexampleLines(replay, o.counterexample));
  }
  return lines;
}

/** The standard-queue schedules' section of bench/CHAOS.md (issue 32). */
function standardMarkdown(s: ScheduleCheckReport): string[] {
  const lines = [
    '## Standard-queue schedules',
    '',
    '`standardBatch` on a standard queue (DLQ after `maxAttempts` + 15 receives): transactional and both lease modes,',
    'half of the schedules with `inFlightWaitMs`; no order is checked.',
    '',
    ...scheduleRows(s, {
      afterFaults: [
        `| of which on \`ChangeMessageVisibilityBatch\` and DLQ sends | ${counts(s.consumerSqsFaults)} |`,
      ],
      afterCrashes: [
        `| copies delivered while another copy was being processed | ${counts(s.duplicatesDelivered)} |`,
        `| copies delivered while their key was held elsewhere | ${s.heldCopies.waited.toLocaleString('en')} waited and were acknowledged, ${s.heldCopies.cameBack.toLocaleString('en')} were given back |`,
        `| records given back to come back soon (key in progress elsewhere) | ${s.inProgressElsewhere.toLocaleString('en')} |`,
      ],
    }),
  ];
  if (s.counterexample)
    lines.push('', ...counterexampleLines(standardReplay(s.counterexample), s.counterexample));
  return lines;
}

/** The arguments of `npm run chaos --` that replay a standard-queue counterexample alone. */
export function standardReplay({ seed, path }: { seed: number; path?: string }): string {
  return `--seed ${seed} --standard-path ${path} --workers 1 --schedules 0 --outbox-schedules 0 --standard-schedules 1 --no-pipeline`;
}

/** A counterexample of a schedules family: the command that replays it (`npm run chaos -- <replay>`), and it. */
function counterexampleLines(replay: string, counterexample: unknown): string[] {
  return [
    `Counterexample — replay: \`npm run chaos -- ${replay}\``,
    '',
    '```json',
    JSON.stringify(counterexample, null, 2),
    '```',
  ];
}

/** The Valkey schedules' section of bench/CHAOS.md: effects run twice by fault, without and with the defence. */
function valkeyMarkdown(v: ValkeyCheckReport): string[] {
  const twice = (tally: ValkeyTally | undefined) =>
    tally
      ? `${tally.twice['at-least-once']} / ${tally.twice['at-most-once']} | ${tally.inDoubt}`
      : 'not run: one node has no replica to wait for | —';
  const lines = [
    '## The Valkey store',
    '',
    'A few keys through the lease core on real redis-servers, one fault on one key: a lost answer, a restart',
    'from an earlier snapshot, or a failover to a replica cut off before the last writes; each run without',
    'and with `waitForReplicas` (issue 46; DESIGN §3.1, docs/faults.md). Effects run twice without the',
    'defence are the losses DESIGN §3.1 documents, not violations.',
    '',
    '| fault | schedules | keys | run twice, at-least-once / at-most-once: without | in doubt: without | with `waitForReplicas` | in doubt: with |',
    '|---|--:|--:|--:|--:|--:|--:|',
    ...VALKEY_FAULT_KINDS.map((kind) => {
      const f = v.byFault[kind];
      return `| ${kind} | ${f.schedules} | ${f.keys} | ${twice(f.without)} | ${twice(f.with)} |`;
    }),
    '',
    `${v.schedules.toLocaleString('en')} schedules (fast-check seed ${v.seed}) in ${(v.durationMs / 1000).toFixed(0)} s; violations: ${v.violations}.`,
  ];
  if (v.counterexample) lines.push('', `Counterexample: \`${JSON.stringify(v.counterexample)}\``);
  return lines;
}

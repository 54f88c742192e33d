import type { OutboxCheckReport } from './check-outbox-schedules.js';
import type { ScheduleCheckReport } from './check-schedules.js';
import { SENDER_CLOCK_SKEW_MS } from './outbox-schedule.js';
import type { PipelineChaosReport } from './pipeline-run.js';
import { CONSUMER_CLOCK_SKEW_MS } from './schedule.js';

export interface ChaosRun {
  date: string;
  machine: string;
  schedules: ScheduleCheckReport;
  pipeline: PipelineChaosReport;
  outbox?: OutboxCheckReport;
  /** The standard-queue schedules (issue 32). */
  standard?: ScheduleCheckReport;
}

/** Whether the run kept every promise: no violation, and no IN_DOUBT that no crash explains. */
export function chaosPassed(run: {
  schedules: ScheduleCheckReport;
  pipeline?: PipelineChaosReport;
  outbox?: OutboxCheckReport;
  standard?: ScheduleCheckReport;
}): boolean {
  const { schedules, pipeline, outbox, standard } = run;
  const pipelinePassed = !pipeline || (pipeline.violations.length === 0 && pipeline.needlessInDoubt === 0);
  const outboxPassed = !outbox || (outbox.violations === 0 && !outbox.counterexample);
  const schedulesPassed = (report: ScheduleCheckReport) =>
    report.violations === 0 && report.unexplainedNeedlessInDoubt === 0 && !report.counterexample;
  return (
    schedulesPassed(schedules) && (!standard || schedulesPassed(standard)) && pipelinePassed && outboxPassed
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
  const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;
  const lines = [
    '# Fault schedules',
    '',
    `Written by \`npm run chaos\` on ${run.date} (${run.machine}). ${chaosPassed(run) ? '**0 violations.**' : '**VIOLATIONS FOUND.**'}`,
    'What is injected and checked is described in the README, "Faults it survives".',
    '',
    '## Generated schedules',
    '',
    '| figure | value |',
    '|---|---|',
    `| schedules | ${s.schedules.toLocaleString('en')} (fast-check seed ${s.seed}) |`,
    `| requests through the fault proxies | ${s.requests.toLocaleString('en')} |`,
    `| steps generated | ${kinds(s.steps)} |`,
    `| publishes with round faults (issue 30), by what their re-send rounds met | ${kinds(s.publishRounds)} |`,
    `| faults injected | ${kinds(s.faults)} |`,
    `| clocks | each consumer container's own, up to ${CONSUMER_CLOCK_SKEW_MS} ms ahead or behind |`,
    `| invocations crashed at a named step | ${s.crashes.toLocaleString('en')} |`,
    `| keys checked (accepted messages) | ${s.keysChecked.toLocaleString('en')} |`,
    `| violations | ${s.violations} |`,
    `| needless IN_DOUBT (effect never started) | ${s.needlessInDoubt}, all after a crash between acquire and effect, or a give-back failing after it (DESIGN §3, §4.1): ${s.unexplainedNeedlessInDoubt === 0 ? 'yes' : `no, ${s.unexplainedNeedlessInDoubt} unexplained`} |`,
    `| time | ${seconds(s.durationMs)} |`,
    '',
    '## The whole pipeline in the sandbox',
    '',
    '| figure | value |',
    '|---|---|',
    `| messages published | ${p.published} (seed ${p.seed}) |`,
    `| faults injected | ${kinds(p.faults)} |`,
    `| invocations that died (timeouts holding a request) | ${p.crashes} |`,
    `| keys checked | ${p.keysChecked} |`,
    `| in the DLQ | ${p.deadLettered} (${Object.entries(p.deadLetterReasons)
      .map(([reason, n]) => `${reason} ${n}`)
      .join(', ')}) |`,
    `| IN_DOUBT | ${p.inDoubt}, needless: ${p.needlessInDoubt} |`,
    `| violations | ${p.violations.length} |`,
    `| time | ${seconds(p.durationMs)} |`,
  ];
  if (run.outbox) lines.push('', ...outboxMarkdown(run.outbox));
  if (run.standard) lines.push('', ...standardMarkdown(run.standard));
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
  if (p.violations.length > 0)
    lines.push('', '## Pipeline violations', '', ...p.violations.map((v) => `- ${v}`));
  return `${lines.join('\n')}\n`;
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

/** The outbox schedules' section of bench/CHAOS.md. */
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
    lines.push(
      '',
      `Counterexample — replay: \`npm run chaos -- --seed ${o.counterexample.seed} --outbox-path ${o.counterexample.path} --workers 1 --schedules 0 --outbox-schedules 1 --no-pipeline\``,
      '',
      '```json',
      JSON.stringify(o.counterexample, null, 2),
      '```',
    );
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
    '| figure | value |',
    '|---|---|',
    `| schedules | ${s.schedules.toLocaleString('en')} (fast-check seed ${s.seed}) |`,
    `| requests through the fault proxies | ${s.requests.toLocaleString('en')} |`,
    `| steps generated | ${counts(s.steps)} |`,
    `| faults injected (DynamoDB and SQS, \`ChangeMessageVisibility\` and the DLQ send included) | ${counts(s.faults)} |`,
    `| clocks | each consumer container's own, up to ${CONSUMER_CLOCK_SKEW_MS} ms ahead or behind |`,
    `| invocations crashed at a named step | ${s.crashes.toLocaleString('en')} |`,
    `| copies delivered while another copy was being processed | ${counts(s.duplicatesDelivered)} |`,
    `| copies delivered while their key was held elsewhere | ${s.heldCopies.waited.toLocaleString('en')} waited and were acknowledged, ${s.heldCopies.cameBack.toLocaleString('en')} were given back |`,
    `| records given back to come back soon (key in progress elsewhere) | ${s.inProgressElsewhere.toLocaleString('en')} |`,
    `| keys checked (accepted messages) | ${s.keysChecked.toLocaleString('en')} |`,
    `| violations (lost, effect twice, …) | ${s.violations} |`,
    `| needless IN_DOUBT (effect never started) | ${s.needlessInDoubt}, all explained by a crash or a failed give-back: ${s.unexplainedNeedlessInDoubt === 0 ? 'yes' : `no, ${s.unexplainedNeedlessInDoubt} unexplained`} |`,
    `| time | ${(s.durationMs / 1000).toFixed(0)} s |`,
  ];
  if (s.counterexample) {
    lines.push(
      '',
      `Counterexample — replay: \`npm run chaos -- --seed ${s.counterexample.seed} --standard-path ${s.counterexample.path} --workers 1 --schedules 0 --outbox-schedules 0 --standard-schedules 1 --no-pipeline\``,
      '',
      '```json',
      JSON.stringify(s.counterexample, null, 2),
      '```',
    );
  }
  return lines;
}

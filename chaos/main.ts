/**
 * `npm run chaos [-- --schedules N --outbox-schedules N --standard-schedules N --operator-schedules N
 * --valkey-schedules N --seed S --workers W --path P --outbox-path P --standard-path P --quick --no-pipeline
 * --pipeline-only]`: runs the generated fault schedules (10,000 by default), the outbox's (2,000), the
 * standard queue's (5,000), the operator's commands' (300), the Valkey store's (300) and the whole pipeline
 * under faults in the sandbox, prints the figures and writes them to
 * bench/CHAOS.md (`--quick`: 300, 100, 300, 30 and 30 schedules, a smaller pipeline, written to
 * .oncely/chaos-quick/). `--pipeline-only`: the pipeline alone (seed `--seed`, a random one by
 * default), its section of the file rewritten and the rest kept. Exit code 1 if any invariant broke.
 */
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { startDynamoDbLocal } from '../sandbox/dynamodb-local.js';
import { startSqsEmulator } from '../sandbox/sqs-emulator.js';
import {
  chaosMarkdown,
  chaosPassed,
  pipelinePassed,
  standardReplay,
  withPipelineSection,
} from './chaos-report.js';
import { checkOperatorSchedules, type OperatorCheckReport } from './check-operator-schedules.js';
import { checkOutboxSchedules, type OutboxCheckReport } from './check-outbox-schedules.js';
import { checkSchedules, type ScheduleCheckReport } from './check-schedules.js';
import { checkValkeySchedules, type ValkeyCheckReport } from './check-valkey-schedules.js';
import { type PipelineChaosReport, runPipelineChaos } from './pipeline-run.js';
import { standardScheduleArbitrary } from './standard-schedule.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { values } = parseArgs({
  options: {
    schedules: { type: 'string' },
    seed: { type: 'string' },
    path: { type: 'string' },
    'outbox-schedules': { type: 'string' },
    'outbox-path': { type: 'string' },
    'standard-schedules': { type: 'string' },
    'standard-path': { type: 'string' },
    'operator-schedules': { type: 'string' },
    'valkey-schedules': { type: 'string' },
    workers: { type: 'string', default: '4' },
    quick: { type: 'boolean', default: false },
    'no-pipeline': { type: 'boolean', default: false },
    'pipeline-only': { type: 'boolean', default: false },
  },
});
const schedules = Number(values.schedules ?? (values.quick ? 300 : 10_000));
const outboxSchedules = Number(values['outbox-schedules'] ?? (values.quick ? 100 : 2_000));
const standardSchedules = Number(values['standard-schedules'] ?? (values.quick ? 300 : 5_000));
const operatorSchedules = Number(values['operator-schedules'] ?? (values.quick ? 30 : 300));
const valkeySchedules = Number(values['valkey-schedules'] ?? (values.quick ? 30 : 300));
const seed = values.seed === undefined ? undefined : Number(values.seed);
const output = values.quick ? '.oncely/chaos-quick/CHAOS.md' : 'bench/CHAOS.md';
const machine = `${cpus().length} cores, Node ${process.versions.node}`;
const today = () => new Date().toISOString().slice(0, 10);

/** The whole pipeline under faults, run twice with one seed (its faults must come out the same), its figures printed. */
async function runPipeline(pipelineSeed: number): Promise<PipelineChaosReport> {
  const runOnce = () =>
    runPipelineChaos({
      seed: pipelineSeed,
      customers: values.quick ? 15 : 40,
      ordersPerCustomer: values.quick ? 6 : 8,
      // A bound, not a measure (a run takes about 35 s): on a busy machine many invocations time out.
      settleTimeoutMs: 300_000,
      print: (line) => console.log(line),
    });
  console.log('\nThe whole pipeline in the sandbox, under faults …');
  const first = await runOnce();
  console.log('The same seed again: its faults must come out the same …');
  const again = await runOnce();
  const pipeline = {
    ...first,
    violations: [...first.violations, ...again.violations.map((violation) => `(run again) ${violation}`)],
    faultsNotMet: first.faultsNotMet + again.faultsNotMet,
    rerunFaults: again.faults,
  };
  const causes = pipeline.deadLetterCauses;
  console.log(
    `  ${pipeline.published} published, ${pipeline.keysChecked} keys checked, ${pipeline.violations.length} violations, ` +
      `${pipeline.inDoubt} in doubt (${pipeline.needlessInDoubt} needless), ${pipeline.deadLettered} in the DLQ ` +
      `(${causes.intended} intended poison, ${causes.businessRule.length} business rule unmeant, ${causes.other.length} other), ` +
      `faults ${JSON.stringify(pipeline.faults)} (run again: ${JSON.stringify(pipeline.rerunFaults)}; ` +
      `${pipeline.faultsNotMet} drawn and not met), ${pipeline.crashes} invocations died, ${(pipeline.durationMs / 1000).toFixed(0)} s`,
  );
  for (const violation of pipeline.violations) console.log(`  VIOLATION: ${violation}`);
  for (const key of causes.businessRule) console.log(`  UNEXPECTED IN THE DLQ: ${key} broke a business rule`);
  for (const entry of causes.other) console.log(`  UNEXPECTED IN THE DLQ: ${entry}`);
  return pipeline;
}

/** The pipeline alone: its section of the output rewritten, the schedules' sections kept. */
async function runPipelineOnly(): Promise<boolean> {
  const pipeline = await runPipeline(seed ?? randomInt(2 ** 31));
  const previous = existsSync(output) ? readFileSync(output, 'utf8') : '';
  mkdirSync(dirname(output), { recursive: true });
  writeFileSync(output, withPipelineSection(previous, { date: today(), machine, pipeline }));
  console.log(`\nIts section of ${output} rewritten.`);
  return pipelinePassed(pipeline);
}

/** The schedules, the outbox's, the standard queue's, then the pipeline: the whole file written. */
async function runEverything(): Promise<boolean> {
  const [dynamodb, sqs] = await Promise.all([startDynamoDbLocal(), startSqsEmulator()]);
  let schedulesReport: Awaited<ReturnType<typeof checkSchedules>>;
  let outbox: OutboxCheckReport;
  let standard: ScheduleCheckReport;
  let operator: OperatorCheckReport;
  try {
    console.log(
      `Fault schedules: ${schedules.toLocaleString('en')} generated workloads, ${values.workers} at a time …`,
    );
    let last = 0;
    /** Prints how many `what` are done, every 10 s at most. */
    const progress = (what: string) => (done: number) => {
      if (Date.now() - last < 10_000) return;
      last = Date.now();
      console.log(`  … ${done.toLocaleString('en')} ${what}`);
    };
    schedulesReport = await checkSchedules({
      emulators: { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint },
      schedules,
      seed,
      path: values.path,
      workers: Number(values.workers),
      onProgress: progress('schedules'),
    });
    console.log(`Outbox schedules: ${outboxSchedules.toLocaleString('en')}, ${values.workers} at a time …`);
    outbox = await checkOutboxSchedules({
      emulators: { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint },
      schedules: outboxSchedules,
      seed,
      path: values['outbox-path'],
      workers: Number(values.workers),
      onProgress: progress('outbox schedules'),
    });
    console.log(
      `Standard-queue schedules: ${standardSchedules.toLocaleString('en')}, ${values.workers} at a time …`,
    );
    standard = await checkSchedules({
      emulators: { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint },
      arbitrary: standardScheduleArbitrary,
      schedules: standardSchedules,
      seed,
      path: values['standard-path'],
      workers: Number(values.workers),
      onProgress: progress('standard-queue schedules'),
    });
    console.log(
      `Operator schedules: ${operatorSchedules.toLocaleString('en')}, ${values.workers} at a time …`,
    );
    operator = await checkOperatorSchedules({
      emulators: { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint },
      schedules: operatorSchedules,
      seed,
      workers: Number(values.workers),
      onProgress: progress('operator schedules'),
    });
  } finally {
    await sqs.stop();
    await dynamodb.stop();
  }
  const r = schedulesReport;
  console.log(
    `  ${r.schedules.toLocaleString('en')} schedules in ${(r.durationMs / 1000).toFixed(0)} s (seed ${r.seed}): ` +
      `${r.keysChecked.toLocaleString('en')} keys checked, ${r.violations} violations, ` +
      `${r.needlessInDoubt} needless IN_DOUBT (${r.unexplainedNeedlessInDoubt} unexplained by a crash or a failed give-back), ` +
      `faults ${JSON.stringify(r.faults)}, ${r.crashes} crashes, steps ${JSON.stringify(r.steps)}, ` +
      `publish round faults ${JSON.stringify(r.publishRounds)}`,
  );
  if (r.counterexample) console.log(`  COUNTEREXAMPLE: ${JSON.stringify(r.counterexample)}`);
  console.log(
    `  ${outbox.schedules.toLocaleString('en')} outbox schedules in ${(outbox.durationMs / 1000).toFixed(0)} s ` +
      `(seed ${outbox.seed}): writes ${JSON.stringify(outbox.writes)}, ${outbox.messages.toLocaleString('en')} messages, ` +
      `${outbox.violations} violations, faults ${JSON.stringify(outbox.faults)}, ${outbox.crashes} crashes, ` +
      `${outbox.stalls} stalls, ${outbox.duplicateSends} sent twice (${JSON.stringify(outbox.explained)}), ` +
      `steps ${JSON.stringify(outbox.steps)}`,
  );
  if (outbox.counterexample) console.log(`  OUTBOX COUNTEREXAMPLE: ${JSON.stringify(outbox.counterexample)}`);
  console.log(
    `  ${standard.schedules.toLocaleString('en')} standard-queue schedules in ${(standard.durationMs / 1000).toFixed(0)} s ` +
      `(seed ${standard.seed}): ${standard.keysChecked.toLocaleString('en')} keys checked, ${standard.violations} violations, ` +
      `${standard.needlessInDoubt} needless IN_DOUBT (${standard.unexplainedNeedlessInDoubt} unexplained), ` +
      `faults ${JSON.stringify(standard.faults)} (consumer's SQS requests ${JSON.stringify(standard.consumerSqsFaults)}), ${standard.crashes} crashes, steps ${JSON.stringify(standard.steps)}, ` +
      `duplicates delivered ${JSON.stringify(standard.duplicatesDelivered)}, copies of a held key ${JSON.stringify(standard.heldCopies)}, ` +
      `${standard.inProgressElsewhere} records given back as in progress elsewhere`,
  );
  if (standard.counterexample) {
    console.log(`  STANDARD COUNTEREXAMPLE: ${JSON.stringify(standard.counterexample)}`);
    console.log(`  replay: npm run chaos -- ${standardReplay(standard.counterexample)}`);
  }

  console.log(
    `  ${operator.schedules.toLocaleString('en')} operator schedules in ${(operator.durationMs / 1000).toFixed(0)} s ` +
      `(seed ${operator.seed}): ${operator.messages} DLQ messages, ${operator.violations} violations, ` +
      `${operator.concurrentSteps} steps with two operators, endings ${JSON.stringify(operator.endings)}, faults ${JSON.stringify(operator.faults)}`,
  );
  if (operator.counterexample)
    console.log(`  OPERATOR COUNTEREXAMPLE: ${JSON.stringify(operator.counterexample)}`);

  console.log(`Valkey schedules: ${valkeySchedules.toLocaleString('en')}, one at a time …`);
  const valkey: ValkeyCheckReport = await checkValkeySchedules({ schedules: valkeySchedules, seed });
  console.log(
    `  ${valkey.schedules.toLocaleString('en')} Valkey schedules in ${(valkey.durationMs / 1000).toFixed(0)} s ` +
      `(seed ${valkey.seed}): ${valkey.violations} violations, by fault ${JSON.stringify(valkey.byFault)}`,
  );
  if (valkey.counterexample) console.log(`  VALKEY COUNTEREXAMPLE: ${JSON.stringify(valkey.counterexample)}`);

  const pipeline = values['no-pipeline'] ? undefined : await runPipeline(seed ?? r.seed);

  const replaying = [values.path, values['outbox-path'], values['standard-path']].some(
    (path) => path !== undefined,
  );
  if (pipeline && !replaying) {
    const run = {
      date: today(),
      machine,
      schedules: r,
      pipeline,
      outbox,
      standard,
      operator,
      valkey,
    };
    mkdirSync(dirname(output), { recursive: true });
    writeFileSync(output, chaosMarkdown(run));
    console.log(`\nWritten to ${output}.`);
  }
  return chaosPassed({ schedules: r, pipeline, outbox, standard, operator, valkey });
}

const passed = values['pipeline-only'] ? await runPipelineOnly() : await runEverything();
console.log(passed ? '0 violations.' : 'Invariants broken: see above.');
process.exitCode = passed ? 0 : 1;

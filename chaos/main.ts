/**
 * `npm run chaos [-- --schedules N --outbox-schedules N --seed S --workers W --path P --outbox-path P
 * --quick --no-pipeline]`: runs the generated fault schedules (10,000 by default), the outbox's
 * (2,000) and the whole pipeline under faults in the sandbox, prints the figures and writes them to
 * bench/CHAOS.md (`--quick`: 300 and 100 schedules, a smaller pipeline, written to
 * .oncely/chaos-quick/). Exit code 1 if any invariant broke.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { startDynamoDbLocal } from '../sandbox/dynamodb-local.js';
import { startSqsEmulator } from '../sandbox/sqs-emulator.js';
import { chaosMarkdown, chaosPassed } from './chaos-report.js';
import { checkOutboxSchedules, type OutboxCheckReport } from './check-outbox-schedules.js';
import { checkSchedules } from './check-schedules.js';
import { type PipelineChaosReport, runPipelineChaos } from './pipeline-run.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { values } = parseArgs({
  options: {
    schedules: { type: 'string' },
    seed: { type: 'string' },
    path: { type: 'string' },
    'outbox-schedules': { type: 'string' },
    'outbox-path': { type: 'string' },
    workers: { type: 'string', default: '4' },
    quick: { type: 'boolean', default: false },
    'no-pipeline': { type: 'boolean', default: false },
  },
});
const schedules = Number(values.schedules ?? (values.quick ? 300 : 10_000));
const outboxSchedules = Number(values['outbox-schedules'] ?? (values.quick ? 100 : 2_000));
const seed = values.seed === undefined ? undefined : Number(values.seed);
const output = values.quick ? '.oncely/chaos-quick/CHAOS.md' : 'bench/CHAOS.md';

const [dynamodb, sqs] = await Promise.all([startDynamoDbLocal(), startSqsEmulator()]);
let schedulesReport: Awaited<ReturnType<typeof checkSchedules>>;
let outbox: OutboxCheckReport;
try {
  console.log(
    `Fault schedules: ${schedules.toLocaleString('en')} generated workloads, ${values.workers} at a time …`,
  );
  let last = 0;
  schedulesReport = await checkSchedules({
    emulators: { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint },
    schedules,
    seed,
    path: values.path,
    workers: Number(values.workers),
    onProgress: (done) => {
      if (Date.now() - last < 10_000) return;
      last = Date.now();
      console.log(`  … ${done.toLocaleString('en')} schedules`);
    },
  });
  console.log(`Outbox schedules: ${outboxSchedules.toLocaleString('en')}, ${values.workers} at a time …`);
  outbox = await checkOutboxSchedules({
    emulators: { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint },
    schedules: outboxSchedules,
    seed,
    path: values['outbox-path'],
    workers: Number(values.workers),
    onProgress: (done) => {
      if (Date.now() - last < 10_000) return;
      last = Date.now();
      console.log(`  … ${done.toLocaleString('en')} outbox schedules`);
    },
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

let pipeline: PipelineChaosReport | undefined;
if (!values['no-pipeline']) {
  console.log('\nThe whole pipeline in the sandbox, under faults …');
  pipeline = await runPipelineChaos({
    seed: seed ?? r.seed,
    customers: values.quick ? 15 : 40,
    ordersPerCustomer: values.quick ? 6 : 8,
    print: (line) => console.log(line),
  });
  console.log(
    `  ${pipeline.published} published, ${pipeline.keysChecked} keys checked, ${pipeline.violations.length} violations, ` +
      `${pipeline.inDoubt} in doubt (${pipeline.needlessInDoubt} needless), ${pipeline.deadLettered} in the DLQ, ` +
      `faults ${JSON.stringify(pipeline.faults)}, ${pipeline.crashes} invocations died, ${(pipeline.durationMs / 1000).toFixed(0)} s`,
  );
  for (const violation of pipeline.violations) console.log(`  VIOLATION: ${violation}`);
}

if (pipeline && values.path === undefined && values['outbox-path'] === undefined) {
  const machine = `${cpus().length} cores, Node ${process.versions.node}`;
  const run = { date: new Date().toISOString().slice(0, 10), machine, schedules: r, pipeline, outbox };
  mkdirSync(dirname(output), { recursive: true });
  writeFileSync(output, chaosMarkdown(run));
  console.log(`\nWritten to ${output}.`);
}
const passed = chaosPassed({ schedules: r, pipeline, outbox });
console.log(passed ? '0 violations.' : 'Invariants broken: see above.');
process.exitCode = passed ? 0 : 1;

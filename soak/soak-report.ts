import { describeMachine } from '../harness/machine.js';
import { percentile } from '../harness/statistics.js';
import { bucketSecondsFor, completionBuckets } from './series.js';
import type { SoakJudgement } from './soak-judgement.js';
import type { SoakResult } from './soak-run.js';

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const round = (value: number, digits = 1) => value.toFixed(digits);

/** bench/SOAK.md: what the soak checked and measured, each figure with how it was taken. */
export function soakMarkdown(result: SoakResult, judgement: SoakJudgement, started: Date): string {
  const { options, verdict } = result;
  const machine = describeMachine();
  const latencies = result.completions.map((c) => c.latencyMs).sort((a, b) => a - b);
  const buckets = completionBuckets(result, bucketSecondsFor(result));
  const steady = buckets.slice(Math.floor(buckets.length / 4), Math.floor((buckets.length * 3) / 4));
  const quarterOf = (from: number, to: number) =>
    result.completions
      .filter(
        (c) => c.atSeconds >= from * result.producingSeconds && c.atSeconds < to * result.producingSeconds,
      )
      .map((c) => c.latencyMs)
      .sort((a, b) => a - b);
  const [first, last] = [quarterOf(0.25, 0.5), quarterOf(0.75, 1)];
  const completedPerSecond = verdict.completed / result.totalSeconds;
  const dynamodbRequests = sum(Object.values(result.requests.dynamodb));
  const sqsRequests = sum(Object.values(result.requests.sqs));
  const perMessage = (n: number) => round(n / verdict.completed, 2);
  const lines = [
    '# Soak: the shop’s pipeline under steady load in the sandbox',
    '',
    `\`npm run soak\` on ${started.toISOString().slice(0, 10)}: ${machine.cpus} CPUs (${machine.cpuModel}), ` +
      `${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.java}; load average ${round(machine.loadAverage)} at the end. ` +
      'What it runs and why: docs/soak.md.',
    '',
    `**${judgement.passed ? 'Passed' : 'FAILED'}.**`,
    '',
    '| check | result | |',
    '| --- | --- | --- |',
    ...judgement.checks.map(
      (check) => `| ${check.name} | ${check.ok ? 'ok' : '**failed**'} | ${check.detail} |`,
    ),
    '',
    '![throughput, latency and memory over the run](soak.svg)',
    '',
    '## The run',
    '',
    `- ${result.accepted} messages accepted (the stock load of 5 included) over ${result.groups} groups, ` +
      `${Math.round(result.groups * options.outboxShare)} of them placing orders through the outbox; ` +
      `producers at up to ${options.ratePerSecond} messages/s, pausing while more than ${options.maxQueued} were queued.`,
    `- Producing took ${Math.round(result.producingSeconds)} s; everything had settled ${Math.round(result.totalSeconds)} s after the start.`,
    `- ${verdict.completed} COMPLETED; ${sum(Object.values(verdict.inDoubtByCause))} IN_DOUBT ` +
      `(${causes(verdict.inDoubtByCause)}); ${verdict.deadLettered} DLQ copies. ${verdict.keysChecked} keys checked.`,
    `- Duplicates: ${result.producers.republished} messages published twice at once; ${result.producers.late} sent again ` +
      `after SQS's deduplication window; ${result.producers.repeatsRefused} orders placed a second time, each refused. ` +
      `${verdict.remindersResent} reminders (at-least-once) were sent again after an unknown outcome (the gateway dedupes them).`,
    `- Faults: ${causes(result.faults)} injected into the functions' DynamoDB and SQS requests; ` +
      `${result.crashes} consumer invocations died (a hung request held to the 2 s timeout, the worker terminated). ` +
      `PlaceOrder calls tried again: ${result.producers.placeRetries}; failed for good: ${result.producers.placeFailures.length}.`,
    `- The outbox: ${result.outbox.written} OrderPlaced events; ${result.outbox.relayed} relayed, ${result.outbox.swept} swept ` +
      `(${round(judgement.relayedShare * 100)} % by the relay), ${result.outbox.pending} pending at the end.`,
    '',
    '## Throughput and latency',
    '',
    `- ${round(completedPerSecond)} messages completed per second over the whole run; ` +
      `${round(median(steady.map((b) => b.completedPerSecond)))} per second (median of ${bucketSecondsFor(result)} s buckets) in its middle half.`,
    `- End to end (first publish, or the PlaceOrder call, to the record's COMPLETED): p50 ${round(percentile(latencies, 50) / 1000, 2)} s, ` +
      `p99 ${round(percentile(latencies, 99) / 1000, 2)} s over the run. Second quarter of producing: p50 ` +
      `${round(percentile(first, 50) / 1000, 2)} s, p99 ${round(percentile(first, 99) / 1000, 2)} s; last quarter: ` +
      `p50 ${round(percentile(last, 50) / 1000, 2)} s, p99 ${round(percentile(last, 99) / 1000, 2)} s.`,
    '',
    '## Memory',
    '',
    'Each series’ floor (its lowest sample, what survives garbage collection) over the second quarter of ' +
      'producing (after warm-up) and over the last quarter. A function’s heap is the largest old generation (V8’s heap without its young generation, whose garbage ' +
      'swings by tens of MiB between collections) of its running containers’ as of their last answers ' +
      '(`LocalFunctionRuntime.usage()`); DynamoDB Local’s is its JVM’s resident memory; the host’s heap holds ' +
      'the SQS emulator, the pollers and the soak’s own bookkeeping.',
    '',
    '| part | after warm-up | at the end | bound | why this bound |',
    '| --- | --- | --- | --- | --- |',
    ...judgement.memory.map(
      (part) =>
        `| ${part.part} | ${mib(part.afterWarmUpBytes)} | ${mib(part.endBytes)} | ${mib(part.boundBytes)} | ${part.bound} |`,
    ),
    '',
    '## Per message',
    '',
    'The functions’ own requests through the fault proxies (SDK retries included), per COMPLETED message:',
    '',
    `- DynamoDB: ${perMessage(dynamodbRequests)} requests (${Object.entries(result.requests.dynamodb)
      .sort(([, a], [, b]) => b - a)
      .map(([operation, n]) => `${operation} ${perMessage(n)}`)
      .join(', ')}).`,
    `- SQS: ${perMessage(sqsRequests)} requests (${Object.entries(result.requests.sqs)
      .sort(([, a], [, b]) => b - a)
      .map(([operation, n]) => `${operation} ${perMessage(n)}`)
      .join(', ')}).`,
    '',
    'Each function’s worker CPU over the run (its threads only, from /proc):',
    '',
    '| function | invocations | CPU | per invocation |',
    '| --- | --- | --- | --- |',
    ...Object.entries(result.functions)
      .filter(([, usage]) => usage.invocations > 0)
      .map(
        ([name, usage]) =>
          `| ${name} | ${usage.invocations} | ${usage.cpuMs === undefined ? 'n/a' : `${round(usage.cpuMs / 1000)} s`} | ` +
          `${usage.cpuMs === undefined ? 'n/a' : `${round(usage.cpuMs / usage.invocations, 2)} ms`} |`,
      ),
    '',
  ];
  return lines.join('\n');
}

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
const causes = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([cause, n]) => `${n} ${cause}`)
    .join(', ') || 'none';

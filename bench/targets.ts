import type { BatchLatency, NotificationLatency } from './batch-latency.js';
import { COST_MODES } from './billed-usage.js';
import { BASELINE_BUNDLE, type BundledLambda, type BundleSize } from './bundle-size.js';
import type { CostReport } from './cost.js';
import type { PublisherCost } from './publisher-calls.js';
import type { RequestsPerMessage } from './requests-per-message.js';
import type { StartUp } from './start-up.js';
import { BASELINE_PIPELINE, type Throughput } from './throughput.js';

/** Issue 7's and issue 13's targets, judged on the figures of the run; never on expectations. */
export interface TargetVerdict {
  target: string;
  measured: string;
  /** None for a figure the issue asks for without a number to meet it: reported, not judged. */
  met?: boolean;
  /** For a missed target: by how much. */
  shortfall?: string;
}

export function judgeTargets(figures: {
  requests: readonly RequestsPerMessage[];
  latency: readonly BatchLatency[];
  publisher: readonly PublisherCost[];
  bundles: readonly BundleSize[];
  startUp: readonly StartUp[];
  /** (2)'s second workload, when it was measured; and at 1 group with no latency added. */
  notificationLatency?: readonly NotificationLatency[];
  notificationNoLatency?: readonly NotificationLatency[];
  /** (5) and (7), when they were measured. */
  throughput?: readonly Throughput[];
  cost?: CostReport;
}): TargetVerdict[] {
  return [
    requestsTarget(figures.requests),
    latencyTarget(figures.latency),
    ...(figures.notificationLatency
      ? [pipelinedLeaseTarget(figures.notificationLatency, figures.notificationNoLatency)]
      : []),
    publisherTarget(figures.publisher),
    bundleTarget(figures.bundles),
    startUpTarget(figures.startUp),
    ...(figures.throughput ? [throughputTarget(figures.throughput)] : []),
    ...(figures.cost ? [costFigures(figures.cost)] : []),
  ];
}

function requestsTarget(rows: readonly RequestsPerMessage[]): TargetVerdict {
  const first = (subject: RequestsPerMessage['subject']) =>
    rows.find((row) => row.subject === subject && row.scenario === 'first')?.requests ?? Number.NaN;
  const [oncely, powertools] = [first('transactional'), first('powertools')];
  const met = oncely <= 1 && powertools >= 3;
  return {
    target:
      'Transactional mode: 1 DynamoDB request per first delivery, against ≥ 3 for Powertools plus the write',
    measured: `${oncely} against ${powertools}`,
    met,
    shortfall: met
      ? undefined
      : `${oncely > 1 ? `Oncely needed ${oncely - 1} more than 1` : ''}${powertools < 3 ? `Powertools needed only ${powertools}` : ''}`,
  };
}

const TARGET_SPEEDUP = 4;
const TARGET_GROUPS = 10;

function latencyTarget(rows: readonly BatchLatency[]): TargetVerdict {
  const median = (consumer: BatchLatency['consumer']) =>
    rows.find((row) => row.consumer === consumer && row.groups === TARGET_GROUPS)?.latency.median ??
    Number.NaN;
  const [oncely, powertools] = [median('transactional'), median('powertools')];
  const speedup = powertools / oncely;
  const met = speedup >= TARGET_SPEEDUP;
  return {
    target: `Batch latency at ${TARGET_GROUPS} groups: at least ${TARGET_SPEEDUP}× lower than Powertools' FIFO processor`,
    measured: `${speedup.toFixed(1)}× lower (median ${oncely.toFixed(1)} ms against ${powertools.toFixed(1)} ms)`,
    met,
    shortfall: met
      ? undefined
      : `${(TARGET_SPEEDUP - speedup).toFixed(1)}× short: Oncely would need a median of ${(powertools / TARGET_SPEEDUP).toFixed(1)} ms`,
  };
}

const PIPELINED_TARGET_SPEEDUP = 5;

/** Issue 13 §1: one group of ten lease-mode records whose effect costs no DynamoDB request, in both modes. */
function pipelinedLeaseTarget(
  rows: readonly NotificationLatency[],
  noLatency: readonly NotificationLatency[] = [],
): TargetVerdict {
  const medianOf = (list: readonly NotificationLatency[], consumer: NotificationLatency['consumer']) =>
    list.find((row) => row.consumer === consumer && row.groups === 1)?.latency.median ?? Number.NaN;
  const median = (consumer: NotificationLatency['consumer']) => medianOf(rows, consumer);
  const powertools = median('powertools');
  const modes = [
    { mode: 'at-least-once', ms: median('leaseAtLeastOnce') },
    { mode: 'at-most-once', ms: median('leaseAtMostOnce') },
  ].map((measured) => ({ ...measured, speedup: powertools / measured.ms }));
  const short = modes.filter(({ speedup }) => !(speedup >= PIPELINED_TARGET_SPEEDUP));
  return {
    target:
      `Lease mode, 1 group of 10 records, an effect without DynamoDB requests: at least ` +
      `${PIPELINED_TARGET_SPEEDUP}× lower latency than Powertools, in both modes`,
    measured: `${modes
      .map(({ mode, ms, speedup }) => `${mode} ${speedup.toFixed(1)}× (median ${ms.toFixed(1)} ms)`)
      .join(', ')} against ${powertools.toFixed(1)} ms`,
    met: short.length === 0,
    shortfall:
      short.length === 0
        ? undefined
        : short
            .map(
              ({ mode, speedup }) => `${mode} is ${(PIPELINED_TARGET_SPEEDUP - speedup).toFixed(1)}× short`,
            )
            .join('; ') +
          (noLatency.length > 0
            ? `. With no latency added, the at-least-once batch still takes ${medianOf(noLatency, 'leaseAtLeastOnce').toFixed(1)} ms ` +
              `(Powertools' ${medianOf(noLatency, 'powertools').toFixed(1)} ms): the CPU its requests cost on this ` +
              'machine, which no overlap hides (see 2)'
            : ''),
  };
}

const TARGET_CALLS_PER_MESSAGE = 0.1;

function publisherTarget(rows: readonly PublisherCost[]): TargetVerdict {
  const publisher = rows.find((row) => row.sender === 'publisher');
  const perMessage = publisher ? publisher.sqsCalls / publisher.messages : Number.NaN;
  const met = perMessage <= TARGET_CALLS_PER_MESSAGE;
  return {
    target: `Publisher: ≤ ${TARGET_CALLS_PER_MESSAGE} send calls per message`,
    measured: `${perMessage.toFixed(3)} (${publisher?.sqsCalls} SendMessageBatch calls for ${publisher?.messages} messages)`,
    met,
    shortfall: met
      ? undefined
      : `${(perMessage - TARGET_CALLS_PER_MESSAGE).toFixed(3)} calls per message too many`,
  };
}

/** The Oncely Lambdas held against Powertools' consumer in (4) and (6), by the name a verdict gives them. */
const JUDGED_LAMBDAS = { oncely: 'consumer', publisher: 'publisher' } as const satisfies Partial<
  Record<BundledLambda, string>
>;

/** One verdict on a ratio to Powertools' consumer that each judged Lambda must keep below `limit`. */
function ratioVerdict(
  target: string,
  limit: number,
  judged: readonly { name: string; ratio: number; figure: string }[],
  baseline: string,
): TargetVerdict {
  const over = judged.filter(({ ratio }) => !(ratio <= limit));
  const listed = judged.map(({ name, ratio, figure }) => `${name} ${ratio.toFixed(2)}× (${figure})`);
  return {
    target,
    measured: `${listed.join(', ')} against ${baseline}`,
    met: over.length === 0,
    shortfall:
      over.length === 0
        ? undefined
        : over.map(({ name, ratio }) => `the ${name} is ${(ratio - limit).toFixed(2)}× over`).join('; '),
  };
}

const TARGET_BUNDLE_RATIO = 0.25;

function bundleTarget(rows: readonly BundleSize[]): TargetVerdict {
  const bytes = (lambda: BundledLambda) => rows.find((row) => row.lambda === lambda)?.bytes ?? Number.NaN;
  const baseline = bytes(BASELINE_BUNDLE);
  return ratioVerdict(
    `Bundles of the consumer and the publisher: ≤ ${TARGET_BUNDLE_RATIO}× Powertools' consumer, minified`,
    TARGET_BUNDLE_RATIO,
    Object.entries(JUDGED_LAMBDAS).map(([lambda, name]) => ({
      name,
      ratio: bytes(lambda as BundledLambda) / baseline,
      figure: kib(bytes(lambda as BundledLambda)),
    })),
    kib(baseline),
  );
}

const TARGET_START_UP_RATIO = 0.6;

function startUpTarget(rows: readonly StartUp[]): TargetVerdict {
  const row = (lambda: BundledLambda) => rows.find((candidate) => candidate.lambda === lambda);
  const ms = (lambda: BundledLambda) => `${(row(lambda)?.bundle.wallMs.median ?? Number.NaN).toFixed(0)} ms`;
  const verdict = ratioVerdict(
    `Module start-up of the consumer and the publisher: ≤ ${TARGET_START_UP_RATIO}× Powertools' consumer (median of the paired ratios)`,
    TARGET_START_UP_RATIO,
    Object.entries(JUDGED_LAMBDAS).map(([lambda, name]) => ({
      name,
      ratio: row(lambda as BundledLambda)?.pairedRatio?.wall.median ?? Number.NaN,
      figure: ms(lambda as BundledLambda),
    })),
    ms(BASELINE_BUNDLE),
  );
  if (verdict.met) return verdict;
  // The floor: the SDK packages the consumer must load at start, alone, against Powertools' whole start-up.
  const floor =
    (row('oncely')?.sdkAlone.wallMs.median ?? Number.NaN) /
    (row(BASELINE_BUNDLE)?.bundle.wallMs.median ?? Number.NaN);
  return {
    ...verdict,
    shortfall:
      `${verdict.shortfall}. The AWS SDK packages every consumer loads at start take ${floor.toFixed(2)}× ` +
      "Powertools' whole start-up on their own (see 6)",
  };
}

const TARGET_THROUGHPUT_RATIO = 0.7;

/** Issue 13 §4, judged on the median of the rounds' paired ratios: the rounds take turns, so drift falls on both. */
function throughputTarget(rows: readonly Throughput[]): TargetVerdict {
  const oncely = rows.find((row) => row.consumer === 'oncely');
  const baseline = rows.find((row) => row.consumer === BASELINE_PIPELINE);
  const paired = oncely?.pairedRatio;
  const measured = paired?.median ?? Number.NaN;
  const met = measured >= TARGET_THROUGHPUT_RATIO;
  const jvm = (row: Throughput | undefined) => row?.cpuMsPerMessage?.watched;
  const [oncelyJvm, baselineJvm] = [jvm(oncely), jvm(baseline)];
  return {
    target: `End-to-end throughput in the sandbox: ≥ ${TARGET_THROUGHPUT_RATIO}× the consumer without idempotency`,
    measured:
      `${measured.toFixed(2)}× (median of the rounds' ratios, p10–p90 ${paired?.p10.toFixed(2)}–${paired?.p90.toFixed(2)}; ` +
      `${oncely?.messagesPerSecond.median.toFixed(0)} against ${baseline?.messagesPerSecond.median.toFixed(0)} msg/s)`,
    met,
    shortfall: met
      ? undefined
      : `${(TARGET_THROUGHPUT_RATIO - measured).toFixed(2)}× short` +
        (oncelyJvm !== undefined && baselineJvm !== undefined
          ? `: DynamoDB Local spent ${oncelyJvm.toFixed(1)} ms of CPU per message on Oncely's, ` +
            `${baselineJvm.toFixed(1)} ms on the other's (see 5)`
          : ''),
  };
}

/** Issue 13 §3 asks for the figures, with no number to meet: reported, at the most groups per batch measured. */
function costFigures(report: CostReport): TargetVerdict {
  const groups = Math.max(...report.modes.map((row) => row.groups));
  const total = (mode: keyof typeof COST_MODES) =>
    report.modes.find((row) => row.mode === mode && row.groups === groups)?.cost.total ?? Number.NaN;
  return {
    target: 'What a million messages cost in each mode, against Powertools and without idempotency',
    measured: `${(Object.keys(COST_MODES) as (keyof typeof COST_MODES)[])
      .map((mode) => `${COST_MODES[mode].short} $${total(mode).toFixed(2)}`)
      .join(', ')} (${groups} groups per batch; see 7)`,
  };
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

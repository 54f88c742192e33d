import { BEFORE_TRACING_COMMIT, type TracingCost, type TracingCostOptions } from './measure.js';
import { spread } from './spread.js';
import { VARIANT_NAMES } from './variants.js';

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

/** (5c), bench/RESULTS.md's section on what tracing costs the consumer, with its targets judged. */
export function tracingSection(
  cost: TracingCost,
  options: Pick<TracingCostOptions, 'rounds' | 'messages' | 'startUpRuns'>,
) {
  const variant = (name: string) => cost.variants.find((row) => row.variant === name);
  const [absent, api, sdk] = [variant('absent'), variant('api'), variant('sdk')];
  const withApi = cost.bundles.find((bundle) => bundle.withApi);
  const without = cost.bundles.find((bundle) => !bundle.withApi);
  const bundleMs = (figure: number) => `${figure.toFixed(1)} ms`;
  const lines = [
    '## 5c. The cost of tracing',
    '',
    'What the spans of [docs/tracing.md](../docs/tracing.md) cost a consumer (`npm run bench -- --only tracing` ' +
      'measures this section alone). The lease-mode consumer (at-least-once, run as (5b) runs it: on one thread, ' +
      'against DynamoDB Local with no latency added, batches of 10 first deliveries over 10 groups) in a fresh ' +
      `process per run, ${options.rounds} rounds, each running the four variants in a rotating order: ` +
      `${options.messages} messages timed (the thread's CPU, Linux's /proc) and as many profiled (V8's sampling ` +
      "profiler, which gives Oncely's own code its share), after 200 unmeasured. *Before tracing* is the package " +
      `built from the commit before tracing's first (${BEFORE_TRACING_COMMIT}, a worktree of it sharing these ` +
      "dependencies). With an SDK, each record's span is made and handed to a batch processor whose exporter " +
      "drops it: exporting is the SDK's cost, not Oncely's. Each difference is paired by round with the run it " +
      'is compared with. Median (p10 – p90).',
    '',
    "| variant | CPU per message | more than | Oncely's own code | more than | other libraries (Powertools, Middy, OpenTelemetry) | spans per message |",
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...cost.variants.map(
      (row) =>
        `| ${[
          VARIANT_NAMES[row.variant],
          spread(row.cpuMsPerMessage),
          row.more ? `${spread(row.more.cpuMsPerMessage)}, than ${row.more.than}` : 'baseline',
          spread(row.ownMsPerMessage),
          row.more ? `${spread(row.more.ownMsPerMessage)}, than ${row.more.than}` : 'baseline',
          spread(row.librariesMsPerMessage),
          String(row.spansPerMessage),
        ].join(' | ')} |`,
    ),
    '',
    `Without the API, Oncely's own code against the code before tracing: ${absent?.more ? spread(absent.more.ownMsPerMessage) : 'n/a'} ` +
      `(the whole thread: ${absent?.more ? spread(absent.more.cpuMsPerMessage) : 'n/a'}). With the API and no SDK, ` +
      `against without it: ${api?.more ? spread(api.more.ownMsPerMessage) : 'n/a'} (no span is started without an ` +
      `SDK). With an SDK, the whole thread takes ${sdk?.more ? spread(sdk.more.cpuMsPerMessage) : 'n/a'} more, ` +
      "most of it the SDK's span and context work, which any instrumentation pays.",
    '',
    '`oncely/consumer` alone in a handler module (bench/layers/consumer.ts), bundled as the stack bundles its ' +
      `Lambdas, with the API installed (bundled in) and without it, each loaded ${options.startUpRuns} times in ` +
      "turns in a fresh Node process as Lambda's init loads a handler, as (6) loads them: CPU. Without the API " +
      'the bundle carries none of it (test/client/trace-bundle.test.ts checks that); with it, the API is ' +
      'evaluated when the consumer is made, in the init.',
    '',
    '| bundle | minified | gzipped | start-up (CPU) | more than without |',
    '| --- | --- | --- | --- | --- |',
    ...[without, withApi].flatMap((bundle) =>
      bundle
        ? [
            `| ${bundle.withApi ? 'with `@opentelemetry/api`' : 'without it'} | ${kib(bundle.minifiedBytes)} | ` +
              `${kib(bundle.gzippedBytes)} | ${spread(bundle.startUpCpuMs, bundleMs)} | ` +
              `${bundle.startUpCpuMsMoreThanWithout ? spread(bundle.startUpCpuMsMoreThanWithout, bundleMs) : 'baseline'} |`,
          ]
        : [],
    ),
    '',
  ];
  return lines.join('\n');
}

import type { Spread } from '../../harness/statistics.js';
import type { TracingCost } from './measure.js';
import { ms, spread } from './spread.js';

/** What issue 44 asked of tracing's cost: Oncely's own CPU per message at most this much more with an SDK. */
export const OWN_CPU_TARGET_MS = 0.05;

/** Whether a paired difference's spread holds 0: no change the rounds can tell from noise. */
const holdsZero = (more: Spread | undefined) => more !== undefined && more.p10 <= 0 && more.p90 >= 0;

/** Issue 44's targets for tracing's cost, judged on (5c). */
export function tracingVerdicts(cost: TracingCost): { target: string; measured: string; met: boolean }[] {
  const variant = (name: string) => cost.variants.find((row) => row.variant === name);
  const absentMore = variant('absent')?.more?.ownMsPerMessage;
  const sdkMore = variant('sdk')?.more?.ownMsPerMessage;
  const startUpMore = cost.bundles.find((bundle) => bundle.withApi)?.startUpCpuMsMoreThanWithout;
  return [
    {
      target:
        "Tracing, `@opentelemetry/api` absent: Oncely's own CPU per message unchanged within noise (against the code before tracing)",
      measured: absentMore ? `${spread(absentMore)} more` : 'not measured',
      met: holdsZero(absentMore),
    },
    {
      target: `Tracing, with an SDK: Oncely's own CPU per message at most ${ms(OWN_CPU_TARGET_MS)} more than without the API`,
      measured: sdkMore ? `${spread(sdkMore)} more` : 'not measured',
      met: sdkMore !== undefined && sdkMore.median <= OWN_CPU_TARGET_MS,
    },
    {
      target: 'Tracing: start-up of `oncely/consumer` with the API bundled unchanged within noise',
      measured: startUpMore
        ? `${spread(startUpMore, (figure) => `${figure.toFixed(1)} ms`)} more`
        : 'not measured',
      met: holdsZero(startUpMore),
    },
  ];
}

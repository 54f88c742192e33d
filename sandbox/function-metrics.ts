import { FunctionThrottledError } from './function-concurrency.js';
import type { InvocationResult, LocalInvoker } from './lambda-context.js';

/** What Lambda counts of a function, as its CloudWatch metrics (AWS/Lambda) name them. */
export type FunctionMetricName = 'Invocations' | 'Errors' | 'Throttles';

/** A minute's counts are kept this long: CloudWatch's one-minute points are kept 15 days, a sandbox's a day. */
const KEPT_MINUTES = 24 * 60;

/**
 * Each function's invocations, errors and throttles by minute, as Lambda counts them for CloudWatch:
 * an invocation that ran counts once in Invocations (and in Errors when it failed), one refused over
 * the reserved concurrency counts in Throttles only. The sandbox's CloudWatch answers from them
 * (cloudwatch-api.ts).
 */
export class FunctionMetrics {
  /** Counts by `function name`, metric, then minute (epoch minutes). */
  readonly #counts = new Map<string, Map<FunctionMetricName, Map<number, number>>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** `invoker`, counted under `functionName`. */
  counted(functionName: string, invoker: LocalInvoker): LocalInvoker {
    return {
      invoke: async (...args): Promise<InvocationResult> => {
        let result: InvocationResult;
        try {
          result = await invoker.invoke(...args);
        } catch (error) {
          this.#add(
            functionName,
            error instanceof FunctionThrottledError ? ['Throttles'] : ['Invocations', 'Errors'],
          );
          throw error;
        }
        this.#add(functionName, result.ok ? ['Invocations'] : ['Invocations', 'Errors']);
        return result;
      },
    };
  }

  /** The counts of one function's metric by minute (epoch milliseconds of the minute's start), in `[fromMs, toMs)`. */
  points(
    functionName: string,
    metric: FunctionMetricName,
    fromMs: number,
    toMs: number,
  ): Map<number, number> {
    const points = new Map<number, number>();
    const firstMinute = Math.floor(fromMs / 60_000);
    for (const [minute, count] of this.#counts.get(functionName)?.get(metric) ?? []) {
      if (minute >= firstMinute && minute * 60_000 < toMs) points.set(minute * 60_000, count);
    }
    return points;
  }

  #add(functionName: string, metrics: readonly FunctionMetricName[]): void {
    const minute = Math.floor(this.now() / 60_000);
    for (const metric of metrics) {
      const byMinute = this.#series(functionName, metric);
      byMinute.set(minute, (byMinute.get(minute) ?? 0) + 1);
      // Insertion order is time order: the oldest minute is the first.
      const [oldest] = byMinute.keys();
      if (oldest !== undefined && oldest < minute - KEPT_MINUTES) byMinute.delete(oldest);
    }
  }

  #series(functionName: string, metric: FunctionMetricName): Map<number, number> {
    const byMetric = this.#counts.get(functionName) ?? new Map<FunctionMetricName, Map<number, number>>();
    this.#counts.set(functionName, byMetric);
    const byMinute = byMetric.get(metric) ?? new Map<number, number>();
    byMetric.set(metric, byMinute);
    return byMinute;
  }
}

import { Logger } from '@aws-lambda-powertools/logger';
import type { MetricsSink } from '../../lambdas/consumer/index.js';

/** A Powertools logger that prints nothing, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return new Logger({ serviceName: 'consumer-test', logLevel: 'SILENT' });
}

/** Records the metrics a consumer adds, summed by name, instead of publishing them. */
export function metricsRecorder(): MetricsSink & { counts: Record<string, number> } {
  const counts: Record<string, number> = {};
  return {
    counts,
    addMetric: (name, _unit, value) => {
      counts[name] = (counts[name] ?? 0) + value;
    },
  };
}

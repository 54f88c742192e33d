import { type Environment, EnvironmentReader } from './environment.js';

/**
 * The variables naming the construct a function belongs to, by the metric dimension each becomes.
 * The constructs set them, and every metric Oncely publishes itself carries them: one pipeline's or
 * outbox's alarms then watch its own metrics, not those of another with the same `serviceName` in
 * the account and Region.
 */
export const METRICS_SCOPE_ENVIRONMENT = {
  /** `<stack name>/<path of the OncelyPipeline in its stack>`. */
  pipeline: 'ONCELY_PIPELINE',
  /** `<stack name>/<path of the OncelyOutbox in its stack>`. */
  outbox: 'ONCELY_OUTBOX',
} as const;

/** The dimensions of {@link METRICS_SCOPE_ENVIRONMENT} that are set: Powertools' `defaultDimensions`. */
export function metricsScope(environment: Environment = process.env): Record<string, string> {
  const read = new EnvironmentReader(environment);
  const dimensions: Record<string, string> = {};
  for (const [dimension, variable] of Object.entries(METRICS_SCOPE_ENVIRONMENT)) {
    const value = read.optional(variable);
    if (value) dimensions[dimension] = value;
  }
  return dimensions;
}

import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MiddlewareObj } from '@middy/core';
import type { PublishResponse } from './contract.js';
import { PublishConflictError, PublishInProgressError, PublishValidationError } from './errors.js';
import type { PublishCommand } from './validation.js';

/** The CloudWatch metrics (EMF, unit Count, dimension `service`) the publisher emits. */
export const PUBLISHER_METRICS = {
  /**
   * A request the publisher refused — invalid, a requestId reused with other messages, or one still
   * in progress — and so answered with a function error that is no fault of its own. Lambda's
   * `Errors` counts these too: the `PublisherErrors` alarm subtracts them.
   */
  refused: 'PublishRequestsRefused',
} as const;

const REFUSALS = [PublishValidationError, PublishConflictError, PublishInProgressError];

/**
 * Counts each refused request in {@link PUBLISHER_METRICS}`.refused`, timestamped with the
 * invocation's start, as Lambda timestamps its `Errors` (so the two fall in the same period and the
 * alarm's difference is exact). Used before `publisherErrors()`, so that its onError runs after
 * that one named the error.
 */
export function refusalMetrics(metrics: Metrics): MiddlewareObj<PublishCommand, PublishResponse> {
  // Per request: on Lambda Managed Instances one environment runs several invocations at once.
  const invokedAt = new WeakMap<object, number>();
  return {
    name: 'oncely-publisher-refusal-metrics',
    before: (request) => {
      invokedAt.set(request, Date.now());
    },
    onError: (request) => {
      const { error } = request;
      if (!REFUSALS.some((refusal) => error instanceof refusal)) return;
      metrics.setTimestamp(invokedAt.get(request) ?? Date.now());
      metrics.addMetric(PUBLISHER_METRICS.refused, MetricUnit.Count, 1);
      // Which refusal, for a look in Logs Insights; not a dimension, so the alarm reads one series.
      metrics.addMetadata('refusal', (error as Error).name);
      metrics.publishStoredMetrics();
    },
  };
}

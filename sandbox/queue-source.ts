import { OncelyError } from '../lambdas/common/oncely-error.js';
import type { TemplateResource } from './cloudformation.js';
import { filterPatternsOf } from './event-filter.js';
import type { LocalQueue } from './local-resources.js';

/** An SQS event source mapping, to be run by a local poller with Lambda's rules. */
export interface LocalEventSource {
  logicalId: string;
  queue: LocalQueue;
  functionName: string;
  /** Lambda's default for SQS: 10; up to 10,000 on a standard queue with a batching window. */
  batchSize: number;
  /** How long Lambda gathers records before it invokes; 0 (the default): it invokes with one receive's. */
  maximumBatchingWindowInSeconds: number;
  reportBatchItemFailures: boolean;
  /** `ScalingConfig.MaximumConcurrency`; Lambda's own bound without one: 1,000 concurrent batches. */
  maxConcurrency: number;
  /** Whether the template set `ScalingConfig.MaximumConcurrency` (the read API reports it only then). */
  maxConcurrencySet: boolean;
  /** `FilterCriteria.Filters[].Pattern`: JSON texts; a record matching none is deleted unseen. */
  filterPatterns: string[];
  /** `Enabled: false`: Lambda does not poll the queue; the read API says `Disabled`. */
  enabled: boolean;
}

/**
 * A mapping AWS refuses to create (`CreateEventSourceMapping` answers an error), so the sandbox
 * refuses to start: the message names the mapping and gives AWS's own reason.
 */
export class InvalidEventSourceMappingError extends OncelyError {
  static override readonly errorName: string = 'InvalidEventSourceMappingError';
  readonly retryable = false;
}

export interface QueueSourceContext {
  stackName: string;
  logicalId: string;
  resource: TemplateResource;
  queue: LocalQueue;
  /** The queue's template resource, for its visibility timeout and FIFO flag. */
  queueResource: TemplateResource;
  fn: { name: string; timeoutSeconds: number };
  resolve: <T>(value: unknown) => T;
}

/** Lambda's default visibility timeout of a queue that sets none, and its API's bounds. */
const DEFAULT_VISIBILITY_TIMEOUT_SECONDS = 30;
const BATCH_SIZE = { min: 1, max: 10_000 };
const BATCHING_WINDOW_SECONDS = { min: 0, max: 300 };
const MAXIMUM_CONCURRENCY = { min: 2, max: 1000 };
/** What one ReceiveMessage returns at most, and so a batch without a batching window. */
const RECEIVE_MAX = 10;

/**
 * A mapping of an SQS queue with Lambda's defaults for what the template leaves out, or why the
 * sandbox cannot run it as Lambda would (a filter operator it does not emulate). Throws
 * {@link InvalidEventSourceMappingError} for a mapping AWS refuses to create, with AWS's message
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html,
 * https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html).
 */
export function describeQueueSource(context: QueueSourceContext): LocalEventSource | { note: string } {
  const { logicalId, queue, fn, resolve } = context;
  const properties = context.resource.Properties ?? {};
  const setting = <T>(name: string, fallback: T): T =>
    properties[name] === undefined ? fallback : resolve<T>(properties[name]);
  const queueSetting = <T>(name: string, fallback: T): T => {
    const value = context.queueResource.Properties?.[name];
    return value === undefined ? fallback : resolve<T>(value);
  };
  const refuse = (message: string): never => {
    throw new InvalidEventSourceMappingError(
      `Event source mapping ${logicalId} of stack ${context.stackName} (queue ${queue.name} → function ${fn.name}): ` +
        `AWS refuses to create it: ${message}`,
    );
  };

  const batchSize = Number(setting('BatchSize', RECEIVE_MAX));
  const window = Number(setting('MaximumBatchingWindowInSeconds', 0));
  const scaling = setting<{ MaximumConcurrency?: unknown } | undefined>('ScalingConfig', undefined);
  const maxConcurrency =
    scaling?.MaximumConcurrency === undefined ? undefined : Number(resolve(scaling.MaximumConcurrency));
  inRange(batchSize, 'batchSize', BATCH_SIZE, refuse);
  inRange(window, 'maximumBatchingWindowInSeconds', BATCHING_WINDOW_SECONDS, refuse);
  if (maxConcurrency !== undefined)
    inRange(maxConcurrency, 'scalingConfig.maximumConcurrency', MAXIMUM_CONCURRENCY, refuse);
  // A FIFO queue's BatchSize over 10 fails one of these two: it may have no batching window.
  if (batchSize > RECEIVE_MAX && window < 1) {
    refuse(
      'InvalidParameterValueException: Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10',
    );
  }
  if (String(queueSetting('FifoQueue', false)) === 'true' && window > 0) {
    refuse('InvalidParameterValueException: Batching window is not supported for FIFO queues');
  }
  const visibilityTimeout = Number(queueSetting('VisibilityTimeout', DEFAULT_VISIBILITY_TIMEOUT_SECONDS));
  if (fn.timeoutSeconds > visibilityTimeout) {
    refuse(
      `InvalidParameterValueException: Queue visibility timeout: ${visibilityTimeout} seconds is less than Function timeout: ${fn.timeoutSeconds} seconds`,
    );
  }

  const filters = filterPatternsOf(setting('FilterCriteria', {}));
  if ('note' in filters) return filters;
  const filterPatterns = filters.patterns;
  return {
    logicalId,
    queue,
    functionName: fn.name,
    batchSize,
    maximumBatchingWindowInSeconds: window,
    reportBatchItemFailures: setting<string[]>('FunctionResponseTypes', []).includes(
      'ReportBatchItemFailures',
    ),
    maxConcurrency: maxConcurrency ?? MAXIMUM_CONCURRENCY.max,
    maxConcurrencySet: maxConcurrency !== undefined,
    filterPatterns,
    enabled: String(setting('Enabled', true)) !== 'false',
  };
}

/** AWS's validation message for a value out of its API's range. */
function inRange(
  value: number,
  member: string,
  range: { min: number; max: number },
  refuse: (message: string) => never,
): void {
  const constraint = (text: string) =>
    refuse(
      `ValidationException: 1 validation error detected: Value '${value}' at '${member}' failed to satisfy constraint: ${text}`,
    );
  if (value < range.min) constraint(`Member must have value greater than or equal to ${range.min}`);
  if (value > range.max) constraint(`Member must have value less than or equal to ${range.max}`);
}

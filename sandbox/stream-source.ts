import { type TemplateResource, UnresolvableValueError } from './cloudformation.js';
import { filterPatternsOf } from './event-filter.js';
import type { LocalQueue, LocalTable } from './local-resources.js';
import type { StartingPosition } from './stream-shard-reader.js';

/** A DynamoDB-stream event source mapping, to be run by a local stream poller with Lambda's rules. */
export interface LocalStreamSource {
  logicalId: string;
  table: LocalTable;
  /** The table's stream: DynamoDB Local's `LatestStreamArn`, what `Fn::GetAtt [Table, StreamArn]` resolves to. */
  streamArn: string;
  functionName: string;
  functionArn: string;
  /** Lambda's default for streams: 100. */
  batchSize: number;
  startingPosition: StartingPosition;
  /** Retries of a failed batch before it is discarded; -1 (the default): until the record expires. */
  maximumRetryAttempts: number;
  /** Records older than this are discarded unprocessed; -1 (the default): never. */
  maximumRecordAgeInSeconds: number;
  bisectBatchOnFunctionError: boolean;
  reportBatchItemFailures: boolean;
  /** `FilterCriteria.Filters[].Pattern`: JSON texts; a record matching none never reaches the function. */
  filterPatterns: string[];
  maximumBatchingWindowInSeconds: number;
  /** Batches of one shard processed at once, 1 (the default) to 10: records split by item. */
  parallelizationFactor: number;
  /** Where a discarded batch's invocation record goes (`DestinationConfig.OnFailure`). */
  onFailure?: LocalQueue;
}

export interface StreamSourceContext {
  logicalId: string;
  resource: TemplateResource;
  table: LocalTable & { streamArn: string };
  fn: { name: string; arn: string };
  queues: LocalQueue[];
  resolve: <T>(value: unknown) => T;
}

const STARTING_POSITIONS: readonly string[] = ['TRIM_HORIZON', 'LATEST'] satisfies StartingPosition[];

/**
 * A mapping of a table's stream with Lambda's defaults for what the template leaves out, or why the
 * sandbox cannot run it as Lambda would.
 */
export function describeStreamSource(context: StreamSourceContext): LocalStreamSource | { note: string } {
  const { logicalId, table, fn, resolve } = context;
  const properties = context.resource.Properties ?? {};
  const setting = <T>(name: string, fallback: T): T =>
    properties[name] === undefined ? fallback : resolve<T>(properties[name]);

  if (String(setting('Enabled', true)) === 'false') return { note: 'it is disabled (Enabled: false)' };
  if (setting('TumblingWindowInSeconds', undefined) !== undefined) {
    return { note: 'it aggregates over tumbling windows, which the sandbox does not emulate' };
  }
  const startingPosition = String(setting('StartingPosition', ''));
  if (!STARTING_POSITIONS.includes(startingPosition)) {
    return { note: `its starting position ${startingPosition || '(none)'} is not TRIM_HORIZON or LATEST` };
  }
  const filters = filterPatternsOf(setting('FilterCriteria', {}));
  if ('note' in filters) return filters;
  const filterPatterns = filters.patterns;
  const destination = (properties.DestinationConfig as { OnFailure?: { Destination?: unknown } } | undefined)
    ?.OnFailure?.Destination;
  let onFailure: LocalQueue | undefined;
  if (destination !== undefined) {
    const arn = resolveOrUndefined(() => resolve<string>(destination));
    onFailure = context.queues.find((queue) => queue.arn === arn);
    if (!onFailure) {
      return {
        note: `its on-failure destination ${arn ?? JSON.stringify(destination)} is not an SQS queue of the stack`,
      };
    }
  }
  return {
    logicalId,
    table,
    streamArn: table.streamArn,
    functionName: fn.name,
    functionArn: fn.arn,
    batchSize: Number(setting('BatchSize', 100)),
    startingPosition: startingPosition as StartingPosition,
    maximumRetryAttempts: Number(setting('MaximumRetryAttempts', -1)),
    maximumRecordAgeInSeconds: Number(setting('MaximumRecordAgeInSeconds', -1)),
    bisectBatchOnFunctionError: String(setting('BisectBatchOnFunctionError', false)) === 'true',
    reportBatchItemFailures: setting<string[]>('FunctionResponseTypes', []).includes(
      'ReportBatchItemFailures',
    ),
    filterPatterns,
    maximumBatchingWindowInSeconds: Number(setting('MaximumBatchingWindowInSeconds', 0)),
    parallelizationFactor: Number(setting('ParallelizationFactor', 1)),
    ...(onFailure && { onFailure }),
  };
}

/** A value the sandbox cannot resolve (an SNS topic's ARN) is no local queue's. */
function resolveOrUndefined<T>(resolveValue: () => T): T | undefined {
  try {
    return resolveValue();
  } catch (error) {
    if (error instanceof UnresolvableValueError) return undefined;
    throw error;
  }
}

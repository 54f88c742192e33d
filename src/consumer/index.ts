export { DeadLetterQueue, type DeadLetterQueueOptions, DLQ_ATTRIBUTES } from './dead-letter-queue.js';
export * from './errors.js';
export { DEFAULT_MAX_CONCURRENT_GROUPS, type FifoBatchOptions, fifoBatch } from './fifo-batch.js';
export type { ConsumerMessage } from './message.js';
export {
  type ConsumerOperation,
  type LeaseOperationOptions,
  type LeaseRecordContext,
  leaseOperation,
  type RecordContext,
  type TransactionalOperationOptions,
  transactionalOperation,
} from './operations.js';
export { CONSUMER_METRICS, type ConsumerMetric, type MetricsSink } from './telemetry.js';

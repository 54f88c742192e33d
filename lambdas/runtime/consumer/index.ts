export { DeadLetterQueue, type DeadLetterQueueOptions, DLQ_ATTRIBUTES } from './dead-letter-queue';
export * from './errors';
export { DEFAULT_MAX_CONCURRENT_GROUPS, type FifoBatchOptions, fifoBatch } from './fifo-batch';
export type { ConsumerMessage } from './message';
export {
  type ConsumerOperation,
  type LeaseOperationOptions,
  type LeaseRecordContext,
  leaseOperation,
  type RecordContext,
  type TransactionalOperationOptions,
  transactionalOperation,
} from './operations';
export { CONSUMER_METRICS, type ConsumerMetric, type MetricsSink } from './telemetry';

/**
 * `oncely/cdk`: the constructs that provision the Oncely pipeline around your consumer and the
 * transactional outbox of a producing service, and what tools need to find them once deployed.
 *
 *   const pipeline = new OncelyPipeline(this, 'Pipeline', { consumer: { entry: 'src/consumer.ts' } });
 *   new OncelyOutbox(this, 'Outbox', { pipeline }).grantWrite(orderService);
 */

export { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
export { OncelyError } from '../../lambdas/idempotency/errors.js';
export type { OutboxLayout } from '../../lambdas/outbox/layout.js';
export { LAMBDA_BUNDLING, type LambdaBundling, oncelyBundling } from './bundling.js';
export { describeDeployedPipeline } from './deployed-pipeline.js';
export {
  LeaseRecordsNetwork,
  type LeaseRecordsNetworkProps,
  type LeaseRecordsStore,
} from './lease-records-network.js';
export { OncelyOutbox, type OncelyOutboxProps } from './oncely-outbox.js';
export {
  type OncelyConsumerEntry,
  type OncelyConsumerFunction,
  OncelyPipeline,
  type OncelyPipelineProps,
} from './oncely-pipeline.js';
export { OutboxAlarms } from './outbox-alarms.js';
export { OUTBOX_OUTPUTS, type OutboxResources, outboxFromOutputs } from './outbox-outputs.js';
export type { OutboxSettings, ResolvedOutboxSettings } from './outbox-settings.js';
export { PipelineAlarms } from './pipeline-alarms.js';
export {
  MissingStackOutputsError,
  PIPELINE_OUTPUTS,
  type PipelineOutputKey,
  type PipelineResources,
} from './pipeline-outputs.js';
export type { PipelineQueueType, PipelineSettings, ResolvedSettings } from './pipeline-settings.js';
export { SANDBOX_CONTEXT } from './sandbox-context.js';
export { ValkeyLeaseCache, type ValkeyLeaseCacheProps } from './valkey-lease-cache.js';

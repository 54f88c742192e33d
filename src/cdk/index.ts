/**
 * `oncely/cdk`: the construct that provisions the Oncely pipeline around your consumer, and what
 * tools need to find a deployed one.
 *
 *   new OncelyPipeline(this, 'Pipeline', { consumer: { entry: 'src/consumer.ts' } });
 */
export { LAMBDA_BUNDLING, type LambdaBundling } from './bundling.js';
export { describeDeployedPipeline } from './deployed-pipeline.js';
export {
  type OncelyConsumerEntry,
  type OncelyConsumerFunction,
  OncelyPipeline,
  type OncelyPipelineProps,
} from './oncely-pipeline.js';
export { PipelineAlarms, type PipelineAlarmsProps } from './pipeline-alarms.js';
export {
  MissingStackOutputsError,
  PIPELINE_OUTPUTS,
  type PipelineOutputKey,
  type PipelineResources,
  resourcesFromOutputs,
} from './pipeline-outputs.js';
export {
  PipelineConfigurationError,
  type PipelineSettings,
  type ResolvedSettings,
} from './pipeline-settings.js';

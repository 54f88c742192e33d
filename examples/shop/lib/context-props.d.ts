import type { OncelyPipelineProps } from '../../../src/cdk/oncely-pipeline.js';
/** Until you point it at your gateway, notifications fail as retryable and end in the DLQ. */
export declare const PLACEHOLDER_NOTIFICATION_URL = "https://notifications.invalid/send";
/**
 * Builds the pipeline's props from CDK context (strings from the command line, or values from
 * cdk.json). A `prod` stage retains its data and turns deletion protection on; other stages are
 * torn down with the stack.
 */
export declare function pipelinePropsFromContext(get: (key: string) => unknown, stage: string): OncelyPipelineProps;

import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { OncelyPipeline, type OncelyPipelineProps } from '../../../src/cdk/oncely-pipeline.js';
export interface OncelyStackProps extends StackProps {
    readonly pipeline: OncelyPipelineProps;
}
/** The deployable app stack: the pipeline and the outputs other services find it by. */
export declare class OncelyStack extends Stack {
    readonly pipeline: OncelyPipeline;
    constructor(scope: Construct, id: string, props: OncelyStackProps);
}

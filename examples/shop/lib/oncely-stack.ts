import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { OncelyPipeline, type OncelyPipelineProps } from '../../../src/cdk/oncely-pipeline.js';
import { STACK_OUTPUTS } from '../../../src/cdk/stack-outputs.js';

export interface OncelyStackProps extends StackProps {
  readonly pipeline: OncelyPipelineProps;
}

/** The deployable app stack: the pipeline and the outputs other services find it by. */
export class OncelyStack extends Stack {
  readonly pipeline: OncelyPipeline;

  constructor(scope: Construct, id: string, props: OncelyStackProps) {
    super(scope, id, props);
    const pipeline = new OncelyPipeline(this, 'Pipeline', props.pipeline);
    this.pipeline = pipeline;

    const outputs: Record<keyof typeof STACK_OUTPUTS, string> = {
      publisherFunctionName: pipeline.publisher.functionName,
      publisherFunctionArn: pipeline.publisher.functionArn,
      consumerFunctionName: pipeline.consumer.functionName,
      queueUrl: pipeline.queue.queueUrl,
      queueArn: pipeline.queue.queueArn,
      dlqUrl: pipeline.deadLetterQueue.queueUrl,
      dlqArn: pipeline.deadLetterQueue.queueArn,
      idempotencyTableName: pipeline.idempotencyTable.tableName,
      ledgerTableName: pipeline.ledgerTable.tableName,
      idempotencyTtlSeconds: String(pipeline.settings.idempotencyTtl.toSeconds()),
    };
    for (const [key, value] of Object.entries(outputs)) {
      new CfnOutput(this, STACK_OUTPUTS[key as keyof typeof STACK_OUTPUTS], { value });
    }
  }
}

import { CfnOutput, Stack } from 'aws-cdk-lib';
import { OncelyPipeline } from '../../../src/cdk/oncely-pipeline.js';
import { STACK_OUTPUTS } from '../../../src/cdk/stack-outputs.js';
/** The deployable app stack: the pipeline and the outputs other services find it by. */
export class OncelyStack extends Stack {
    pipeline;
    constructor(scope, id, props) {
        super(scope, id, props);
        const pipeline = new OncelyPipeline(this, 'Pipeline', props.pipeline);
        this.pipeline = pipeline;
        const outputs = {
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
            new CfnOutput(this, STACK_OUTPUTS[key], { value });
        }
    }
}
//# sourceMappingURL=oncely-stack.js.map
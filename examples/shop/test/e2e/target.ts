import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import { describeDeployedPipeline } from '../../../../src/cdk/deployed-pipeline.js';
import type { PipelineResources } from '../../../../src/cdk/pipeline-outputs.js';
import { localAwsConfig } from '../../../../src/sandbox/local-aws-config.js';
import { startSandbox } from '../../../../src/sandbox/local-sandbox.js';

/** A running pipeline the end-to-end suite drives, whatever it runs on. */
export interface E2eTarget {
  kind: 'sandbox' | 'stack';
  resources: PipelineResources;
  lambda: LambdaClient;
  sqs: SQSClient;
  dynamodb: DynamoDBClient;
  stop(): Promise<void>;
}

/**
 * The target comes from the environment: `ONCELY_TARGET=stack` with `ONCELY_STACK_NAME` runs the
 * suite against a deployed stack (AWS with the usual credentials, or LocalStack with
 * `AWS_ENDPOINT_URL`); otherwise against a fresh local sandbox.
 */
export async function startTarget(env: NodeJS.ProcessEnv = process.env): Promise<E2eTarget> {
  if (env.ONCELY_TARGET === 'stack') {
    const stackName = env.ONCELY_STACK_NAME;
    if (!stackName) throw new Error('ONCELY_TARGET=stack needs ONCELY_STACK_NAME, e.g. Oncely-dev.');
    const resources = await describeDeployedPipeline(stackName);
    const clients = {
      lambda: new LambdaClient({}),
      sqs: new SQSClient({}),
      dynamodb: new DynamoDBClient({}),
    };
    return { kind: 'stack', resources, ...clients, stop: async () => destroy(clients) };
  }
  if (env.ONCELY_TARGET && env.ONCELY_TARGET !== 'sandbox') {
    throw new Error(`ONCELY_TARGET must be sandbox (the default) or stack, not ${env.ONCELY_TARGET}.`);
  }
  const sandbox = await startSandbox({ functionOutput: () => undefined });
  const { endpoints, resources } = sandbox.description;
  const clients = {
    lambda: new LambdaClient(localAwsConfig(endpoints.lambda)),
    sqs: new SQSClient(localAwsConfig(endpoints.sqs)),
    dynamodb: new DynamoDBClient(localAwsConfig(endpoints.dynamodb)),
  };
  return {
    kind: 'sandbox',
    resources,
    ...clients,
    stop: async () => {
      destroy(clients);
      await sandbox.stop();
    },
  };
}

function destroy(clients: { lambda: LambdaClient; sqs: SQSClient; dynamodb: DynamoDBClient }): void {
  clients.lambda.destroy();
  clients.sqs.destroy();
  clients.dynamodb.destroy();
}

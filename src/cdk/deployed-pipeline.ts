import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { type PipelineResources, resourcesFromOutputs } from './pipeline-outputs.js';

/**
 * Finds a deployed pipeline (AWS, or LocalStack through `AWS_ENDPOINT_URL`) by its stack name.
 * The end-to-end suite and the operations CLI use this when `ONCELY_TARGET=stack`.
 */
export async function describeDeployedPipeline(
  stackName: string,
  client: CloudFormationClient = new CloudFormationClient({}),
): Promise<PipelineResources> {
  const { Stacks } = await client.send(new DescribeStacksCommand({ StackName: stackName }));
  const stack = Stacks?.[0];
  if (!stack) throw new Error(`Stack ${stackName} was not found: deploy it first with \`npx cdk deploy\`.`);
  return resourcesFromOutputs(stackName, stack.Outputs ?? []);
}

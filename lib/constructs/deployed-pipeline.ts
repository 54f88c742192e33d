import type { CloudFormationClient, Stack } from '@aws-sdk/client-cloudformation';
import { assertToolchain, TOOLCHAINS } from './missing-toolchain.js';
import { type PipelineResources, resourcesFromOutputs } from './pipeline-outputs.js';

/**
 * Finds a deployed pipeline (AWS, or LocalStack through `AWS_ENDPOINT_URL`) by its stack name.
 * The end-to-end suite uses this when `ONCELY_TARGET=stack`.
 */
export async function describeDeployedPipeline(
  stackName: string,
  client?: CloudFormationClient,
): Promise<PipelineResources> {
  const stack = await describeStack(stackName, client ?? (await createCloudFormationClient()));
  return resourcesFromOutputs(stackName, stack.Outputs ?? []);
}

/** A deployed stack's outputs, by key: what the operations CLI finds a pipeline or an outbox by. */
export async function describeStackOutputs(
  stackName: string,
  client: CloudFormationClient,
): Promise<Record<string, string>> {
  const stack = await describeStack(stackName, client);
  return Object.fromEntries(
    (stack.Outputs ?? []).flatMap(({ OutputKey, OutputValue }) =>
      OutputKey && OutputValue !== undefined ? [[OutputKey, OutputValue]] : [],
    ),
  );
}

/**
 * A CloudFormation client with the default credentials and region. The client is an optional peer
 * dependency, loaded only here: what runs in Lambda never needs it.
 */
export async function createCloudFormationClient(): Promise<CloudFormationClient> {
  return new (await loadCloudFormation()).CloudFormationClient({});
}

async function describeStack(stackName: string, client: CloudFormationClient): Promise<Stack> {
  const { DescribeStacksCommand } = await loadCloudFormation();
  const { Stacks } = await client.send(new DescribeStacksCommand({ StackName: stackName }));
  const stack = Stacks?.[0];
  if (!stack) throw new Error(`Stack ${stackName} was not found: deploy it first with \`npx cdk deploy\`.`);
  return stack;
}

async function loadCloudFormation() {
  assertToolchain('Reading a deployed stack', TOOLCHAINS.stack);
  return import('@aws-sdk/client-cloudformation');
}

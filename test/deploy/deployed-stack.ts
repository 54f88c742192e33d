import {
  CloudFormationClient,
  DescribeStacksCommand,
  GetTemplateCommand,
  ListStackResourcesCommand,
  type StackResourceSummary,
} from '@aws-sdk/client-cloudformation';
import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { DescribeTableCommand, DynamoDBClient, type TableDescription } from '@aws-sdk/client-dynamodb';
import { GetRolePolicyCommand, IAMClient, ListRolePoliciesCommand } from '@aws-sdk/client-iam';
import {
  type EventSourceMappingConfiguration,
  type FunctionConfiguration,
  GetFunctionConfigurationCommand,
  LambdaClient,
  ListEventSourceMappingsCommand,
} from '@aws-sdk/client-lambda';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { REGION } from './cdk-cli.js';

/** SDK clients of every service the deploy test reads, all at one endpoint. */
export interface AwsClients {
  cloudformation: CloudFormationClient;
  dynamodb: DynamoDBClient;
  iam: IAMClient;
  lambda: LambdaClient;
  logs: CloudWatchLogsClient;
  sqs: SQSClient;
}

export function awsClients(endpoint: string): AwsClients {
  const config = {
    endpoint,
    region: REGION,
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  };
  return {
    cloudformation: new CloudFormationClient(config),
    dynamodb: new DynamoDBClient(config),
    iam: new IAMClient(config),
    lambda: new LambdaClient(config),
    logs: new CloudWatchLogsClient(config),
    sqs: new SQSClient(config),
  };
}

export function destroyClients(clients: AwsClients): void {
  for (const client of Object.values(clients)) client.destroy();
}

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
  DeletionPolicy?: string;
}

/** A deployed stack as CloudFormation holds it: its outputs, its template, its resources. */
export interface DeployedStack {
  name: string;
  status: string;
  outputs: Record<string, string>;
  template: { Resources: Record<string, TemplateResource> };
  resources: StackResourceSummary[];
}

/** A stack's status and outputs, as DescribeStacks gives them. */
export async function describeStack(clients: AwsClients, name: string) {
  const { Stacks = [] } = await clients.cloudformation.send(new DescribeStacksCommand({ StackName: name }));
  const [stack] = Stacks;
  if (!stack) throw new Error(`no stack ${name}`);
  return stack;
}

/** A stack whose template is JSON, as the CDK synthesises an app's. */
export async function readStack(clients: AwsClients, name: string): Promise<DeployedStack> {
  const { cloudformation } = clients;
  const stack = await describeStack(clients, name);
  const { TemplateBody = '{}' } = await cloudformation.send(new GetTemplateCommand({ StackName: name }));
  const resources: StackResourceSummary[] = [];
  let NextToken: string | undefined;
  do {
    const page = await cloudformation.send(new ListStackResourcesCommand({ StackName: name, NextToken }));
    resources.push(...(page.StackResourceSummaries ?? []));
    NextToken = page.NextToken;
  } while (NextToken);
  return {
    name,
    status: String(stack.StackStatus),
    outputs: Object.fromEntries(
      (stack.Outputs ?? []).map((o) => [String(o.OutputKey), String(o.OutputValue)]),
    ),
    template: JSON.parse(TemplateBody),
    resources,
  };
}

/** The physical id of each resource, by logical id: what an in-place update keeps. */
export function physicalIds(stack: DeployedStack, types: string[]): Record<string, string> {
  return Object.fromEntries(
    stack.resources
      .filter((resource) => types.includes(String(resource.ResourceType)))
      .map((resource) => [String(resource.LogicalResourceId), String(resource.PhysicalResourceId)]),
  );
}

export async function queueAttributes(
  clients: AwsClients,
  queueUrl: string,
): Promise<Record<string, string>> {
  const { Attributes = {} } = await clients.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }),
  );
  return Attributes;
}

export async function table(clients: AwsClients, tableName: string): Promise<TableDescription> {
  const { Table } = await clients.dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
  if (!Table) throw new Error(`no table ${tableName}`);
  return Table;
}

export async function functionConfiguration(
  clients: AwsClients,
  functionName: string,
): Promise<FunctionConfiguration> {
  return clients.lambda.send(new GetFunctionConfigurationCommand({ FunctionName: functionName }));
}

export async function eventSourceMappings(
  clients: AwsClients,
  functionName: string,
): Promise<EventSourceMappingConfiguration[]> {
  const { EventSourceMappings = [] } = await clients.lambda.send(
    new ListEventSourceMappingsCommand({ FunctionName: functionName }),
  );
  return EventSourceMappings;
}

export interface PolicyStatement {
  Effect: string;
  Action: string | string[];
  Resource: string | string[];
}

/** Every statement of a role's inline policies, as IAM holds them. */
export async function roleStatements(clients: AwsClients, roleArn: string): Promise<PolicyStatement[]> {
  const RoleName = roleArn.split('/').at(-1);
  const { PolicyNames = [] } = await clients.iam.send(new ListRolePoliciesCommand({ RoleName }));
  const statements: PolicyStatement[] = [];
  for (const PolicyName of PolicyNames) {
    const { PolicyDocument = '{}' } = await clients.iam.send(
      new GetRolePolicyCommand({ RoleName, PolicyName }),
    );
    const document = JSON.parse(decodeURIComponent(PolicyDocument));
    statements.push(...[document.Statement].flat());
  }
  return statements;
}

/** The actions a role's statements allow on `resource`. */
export function actionsOn(statements: PolicyStatement[], resource: string): string[] {
  return statements
    .filter((statement) => statement.Effect === 'Allow' && [statement.Resource].flat().includes(resource))
    .flatMap((statement) => [statement.Action].flat())
    .sort();
}

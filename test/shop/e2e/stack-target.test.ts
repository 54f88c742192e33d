import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  CloudFormationClient,
  DeleteStackCommand,
  DescribeStackResourceCommand,
  DescribeStackResourcesCommand,
  DescribeStacksCommand,
  ListExportsCommand,
  ListStackResourcesCommand,
} from '@aws-sdk/client-cloudformation';
import {
  CreateEventSourceMappingCommand,
  GetFunctionCommand,
  GetFunctionConfigurationCommand,
  LambdaClient,
  ListEventSourceMappingsCommand,
  ListFunctionsCommand,
  UpdateFunctionConfigurationCommand,
} from '@aws-sdk/client-lambda';
import { afterAll, describe, expect, it } from 'vitest';
import { CONSUMER_ENVIRONMENT } from '../../../lambdas/consumer/environment.js';
import { describeDeployedPipeline } from '../../../lib/constructs/deployed-pipeline.js';
import { localAwsConfig } from '../../../sandbox/local-aws-config.js';
import { startSandboxAsStack } from './sandbox-stack.js';

// The sandbox as a stack: its edge answers CloudFormation's and Lambda's read side, so that what
// finds a deployed pipeline by its stack's outputs (describeDeployedPipeline, `oncely --stack`, the
// end-to-end suite with ONCELY_TARGET=stack) runs against it through the same code as against AWS.
// The suite itself runs below, with the environment a user would give it.

const sandbox = await startSandboxAsStack();
const { endpoints, region, stackName } = sandbox.description;
const config = { ...localAwsConfig(endpoints.edge), region };
const cloudformation = new CloudFormationClient(config);
const lambda = new LambdaClient(config);

afterAll(async () => {
  cloudformation.destroy();
  lambda.destroy();
  await sandbox.stop();
});

describe("the sandbox's CloudFormation, at its edge", () => {
  it('describes the stack with the outputs of the ready file, and the pipeline in it', async () => {
    const { Stacks = [] } = await cloudformation.send(new DescribeStacksCommand({ StackName: stackName }));
    expect(Stacks.map((stack) => stack.StackStatus)).toEqual(['CREATE_COMPLETE']);
    const outputs = Object.fromEntries((Stacks[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
    expect(outputs).toEqual(sandbox.description.outputs);
    expect(await describeDeployedPipeline(stackName, cloudformation)).toEqual(sandbox.pipelineResources());
  });

  it('lists every resource of the template: a physical id for what it created, a reason for the rest', async () => {
    const { StackResourceSummaries = [] } = await cloudformation.send(
      new ListStackResourcesCommand({ StackName: stackName }),
    );
    const created = (type: string) =>
      StackResourceSummaries.filter((summary) => summary.PhysicalResourceId && summary.ResourceType === type)
        .map((summary) => summary.PhysicalResourceId)
        .sort();
    const { provisioned } = sandbox;
    expect(created('AWS::SQS::Queue')).toEqual(provisioned.queues.map((queue) => queue.url).sort());
    expect(created('AWS::DynamoDB::Table')).toEqual(provisioned.tables.map((table) => table.name).sort());
    expect(created('AWS::Lambda::Function')).toEqual(provisioned.functions.map((fn) => fn.name).sort());
    const rest = StackResourceSummaries.filter((summary) => !summary.PhysicalResourceId);
    expect(rest.map((s) => s.LogicalResourceId).sort()).toEqual(
      provisioned.notEmulated
        .filter((entry) => entry.type !== 'Output')
        .map((entry) => entry.logicalId)
        .sort(),
    );
    for (const summary of rest)
      expect(summary.ResourceStatusReason).toMatch(/^Not emulated by the Oncely sandbox/);

    const [queue] = provisioned.queues;
    const { StackResourceDetail } = await cloudformation.send(
      new DescribeStackResourceCommand({ StackName: stackName, LogicalResourceId: queue?.logicalId }),
    );
    expect(StackResourceDetail?.PhysicalResourceId).toBe(queue?.url);
    const { StackResources = [] } = await cloudformation.send(
      new DescribeStackResourcesCommand({ StackName: stackName }),
    );
    expect(StackResources).toHaveLength(StackResourceSummaries.length);
    const { Exports } = await cloudformation.send(new ListExportsCommand({}));
    expect(Exports).toEqual([]);
  });

  it('lets `oncely dlq list --stack` find the pipeline, with AWS_ENDPOINT_URL alone', async () => {
    const command = new URL('../../../dist/bin/oncely.js', import.meta.url).pathname;
    const { stdout } = await promisify(execFile)(process.execPath, [
      command,
      'dlq',
      'list',
      '--stack',
      stackName,
    ]);
    expect(stdout).toContain(`The DLQ is empty (${sandbox.pipelineResources().dlqUrl}).`);
  });

  it('answers an unknown stack as CloudFormation does, and refuses to change one', async () => {
    await expect(cloudformation.send(new DescribeStacksCommand({ StackName: 'Nope' }))).rejects.toMatchObject(
      {
        name: 'ValidationError',
        message: 'Stack with id Nope does not exist',
      },
    );
    await expect(cloudformation.send(new DeleteStackCommand({ StackName: stackName }))).rejects.toMatchObject(
      {
        name: 'NotEmulated',
        message: expect.stringMatching(/restart `oncely local`/),
      },
    );
    const { Stacks = [] } = await cloudformation.send(new DescribeStacksCommand({ StackName: stackName }));
    expect(Stacks).toHaveLength(1);
  });
});

describe("the sandbox's Lambda control plane, at its edge", () => {
  const consumer = () => sandbox.pipelineResources().consumerFunctionName;

  it('lists and describes the functions as the template deploys them', async () => {
    const { Functions = [] } = await lambda.send(new ListFunctionsCommand({}));
    expect(Functions.map((fn) => fn.FunctionName).sort()).toEqual(
      sandbox.provisioned.functions.map((fn) => fn.name).sort(),
    );
    const configuration = await lambda.send(
      new GetFunctionConfigurationCommand({ FunctionName: consumer() }),
    );
    expect(configuration).toMatchObject({
      Runtime: 'nodejs24.x',
      Handler: 'index.handler',
      Architectures: ['arm64'],
    });
    const { idempotencyTableName, dlqUrl } = sandbox.pipelineResources();
    expect(configuration.Environment?.Variables).toMatchObject({
      [CONSUMER_ENVIRONMENT.idempotencyTableName]: idempotencyTableName,
      [CONSUMER_ENVIRONMENT.dlqUrl]: dlqUrl,
    });
    const { Configuration } = await lambda.send(
      new GetFunctionCommand({ FunctionName: configuration.FunctionArn }),
    );
    expect(Configuration?.FunctionName).toBe(consumer());
  });

  it('lists the event source mappings of a function', async () => {
    const { EventSourceMappings = [] } = await lambda.send(
      new ListEventSourceMappingsCommand({ FunctionName: consumer() }),
    );
    expect(EventSourceMappings).toEqual([
      expect.objectContaining({
        EventSourceArn: sandbox.pipelineResources().queueArn,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        State: 'Enabled',
      }),
    ]);
    const all = await lambda.send(new ListEventSourceMappingsCommand({}));
    expect(all.EventSourceMappings?.length).toBe(
      sandbox.provisioned.eventSources.length + sandbox.provisioned.streamSources.length,
    );
  });

  it('answers an unknown function as Lambda does, and refuses to change one', async () => {
    await expect(
      lambda.send(new GetFunctionConfigurationCommand({ FunctionName: 'nope' })),
    ).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
    });
    await expect(
      lambda.send(new UpdateFunctionConfigurationCommand({ FunctionName: consumer(), Timeout: 60 })),
    ).rejects.toMatchObject({
      name: 'NotEmulated',
      message: expect.stringMatching(/restart `oncely local`/),
    });
    await expect(
      lambda.send(
        new CreateEventSourceMappingCommand({ FunctionName: consumer(), EventSourceArn: 'arn:aws:sqs:x' }),
      ),
    ).rejects.toMatchObject({ name: 'NotEmulated' });
  });
});

// The end-to-end suite, through ONCELY_TARGET=stack and AWS_ENDPOINT_URL alone.
await import('./pipeline-suite.js');

import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { CreateLogStreamCommand, PutLogEventsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { GetQueueUrlCommand, QueueDoesNotExist } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchProject, type ScratchProject } from '../../bench/scratch-project.js';
import { CONSUMER_ENVIRONMENT } from '../../lambdas/consumer/environment.js';
import { LEGACY_UNRESOLVED_INDEX_NAME, UNRESOLVED_INDEX_NAME } from '../../lambdas/idempotency/record.js';
import { OUTBOX_PENDING_INDEX } from '../../lambdas/outbox/layout.js';
import { describeDeployedPipeline, describeStackOutputs } from '../../lib/constructs/deployed-pipeline.js';
import { outboxFromOutputs } from '../../lib/constructs/outbox-outputs.js';
import type { PipelineResources } from '../../lib/constructs/pipeline-outputs.js';
import { ACCOUNT, awsEnvironment, cdk, REGION } from './cdk-cli.js';
import { EXPLAINED_WARNINGS } from './cfn-lint-explained.js';
import {
  type AwsClients,
  actionsOn,
  awsClients,
  type DeployedStack,
  describeStack,
  destroyClients,
  eventSourceMappings,
  functionConfiguration,
  physicalIds,
  queueAttributes,
  readStack,
  roleStatements,
  table,
} from './deployed-stack.js';
import { type Moto, startMoto } from './moto.js';

// `cdk bootstrap`, `cdk deploy` and `cdk destroy` with the real CDK CLI against moto, an AWS
// implementation Oncely did not write: the example shop (the root's app) and a user's app built
// from the packed tarball. What exists afterwards is read back through the AWS SDK and checked
// against what the constructs mean (DESIGN §7).

const ROOT = join(import.meta.dirname, '..', '..');
const ONCELY_COMMAND = join(ROOT, 'dist', 'bin', 'oncely.js');
const SHOP = 'Shop-dev';
const ADOPTER = 'Signups';
/** The user's second stack: a standard queue's pipeline (DESIGN §5.1). */
const ADOPTER_STANDARD = 'SignupsStandard';

/**
 * Resource types moto's CloudFormation accepts in a template but does not create: a stack lists
 * none of them. They stay covered by the template tests (test/stack). A type not listed here that
 * moto skips fails the test, so a new gap is seen, not assumed.
 */
const MOTO_CREATES_NOT = ['AWS::CDK::Metadata', 'AWS::CloudWatch::Alarm', 'AWS::SQS::QueuePolicy'];
/** Properties moto's CloudFormation ignores: checked in the template CloudFormation holds instead. */
const MOTO_IGNORES = [
  "a table's TimeToLiveSpecification",
  "a table's PointInTimeRecoverySpecification",
  "a function's Architectures",
];

/**
 * A user's app: a consumer, a pipeline and an outbox of its own, all settings left at their
 * defaults; and in a second stack, a standard queue's pipeline with a large batch.
 */
const ADOPTER_FILES: Record<string, string> = {
  'src/consumer.ts': `
import middy from '@middy/core';
import { fifoBatch, leaseOperation } from 'oncely/consumer';
import { z } from 'zod';

const welcome = leaseOperation({
  namespace: 'welcome',
  mode: 'at-most-once',
  payload: z.object({ name: z.string() }),
  run: async ({ payload }) => console.log('welcome', payload.name),
});

export const handler = middy().use(fifoBatch({ operations: { UserSignedUp: welcome } }));
`,
  'src/standard-consumer.ts': `
import middy from '@middy/core';
import { leaseOperation, standardBatch } from 'oncely/consumer';

const welcome = leaseOperation({
  namespace: 'welcome',
  mode: 'at-least-once',
  run: async ({ payload }) => console.log('welcome', payload),
});

export const handler = middy().use(standardBatch({ operations: { UserSignedUp: welcome } }));
`,
  'bin/app.ts': `
import { App, Duration, Stack } from 'aws-cdk-lib';
import { OncelyOutbox, OncelyPipeline } from 'oncely/cdk';

const app = new App();
const stack = new Stack(app, '${ADOPTER}');
const pipeline = new OncelyPipeline(stack, 'Pipeline', { consumer: { entry: 'src/consumer.ts' } });
new OncelyOutbox(stack, 'Outbox', { pipeline });
new OncelyPipeline(new Stack(app, '${ADOPTER_STANDARD}'), 'Pipeline', {
  consumer: { entry: 'src/standard-consumer.ts' },
  queueType: 'standard',
  batchSize: 100,
  maxBatchingWindow: Duration.seconds(2),
});
`,
  'cdk.json': JSON.stringify({ app: 'npx tsx bin/app.ts', notices: false }),
  'package.json': JSON.stringify({ name: 'signups', private: true, type: 'module' }),
};

let moto: Moto;
let env: NodeJS.ProcessEnv;
let clients: AwsClients;
let outputs: string;
let adopter: ScratchProject | undefined;
const notes: string[] = [];

beforeAll(async () => {
  moto = await startMoto();
  env = awsEnvironment(moto.endpoint);
  clients = awsClients(moto.endpoint);
  outputs = mkdtempSync(join(tmpdir(), 'oncely-deploy-'));
}, 60_000);

afterAll(async () => {
  destroyClients(clients);
  await moto?.stop();
  rmSync(outputs, { recursive: true, force: true });
  if (adopter) rmSync(adopter.directory, { recursive: true, force: true });
  if (notes.length > 0) console.log(`Not checked on moto, and why:\n${[...new Set(notes)].join('\n')}`);
});

/** `cdk deploy` as a user runs it, but with `--method direct`: after a change set, moto returns no outputs. */
const deploy = (directory: string, stack: string, context: string[] = []) =>
  cdk(directory, env, [
    'deploy',
    stack,
    ...context.flatMap((value) => ['-c', value]),
    '--require-approval',
    'never',
    '--method',
    'direct',
    '--output',
    join(outputs, stack),
  ]);

describe('cdk deploy against an independent AWS implementation (moto)', () => {
  it('bootstraps the environment', { timeout: 120_000 }, async () => {
    const { output } = await cdk(ROOT, env, ['bootstrap', `aws://${ACCOUNT}/${REGION}`]);
    expect(output).toMatch(/bootstrapped/);
    expect((await describeStack(clients, 'CDKToolkit')).StackStatus).toBe('CREATE_COMPLETE');
  });

  describe('the example shop, the root app', () => {
    let deployed: DeployedStack;

    it('deploys, and creates the pipeline and the outbox as the constructs mean them', {
      timeout: 300_000,
    }, async () => {
      await deploy(ROOT, SHOP);
      deployed = await readStack(clients, SHOP);
      expect(deployed.status).toBe('CREATE_COMPLETE');
      await checkPipeline(deployed);
      await checkOutbox(deployed);
    });

    it('lets the oncely command find the pipeline by its stack name', { timeout: 60_000 }, async () => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [ONCELY_COMMAND, 'dlq', 'list', '--stack', SHOP],
        {
          env,
        },
      );
      const { dlqUrl } = await describeDeployedPipeline(SHOP, clients.cloudformation);
      expect(stdout).toContain(`The DLQ is empty (${dlqUrl}).`);
    });

    it('serves the console for the stack: read-only, with its queues, CloudWatch’s figures and the consumer’s log lines', {
      timeout: 60_000,
    }, async () => {
      // A verdict line in the consumer's log group, as its Powertools Logger writes it on Lambda.
      const stackOutputs = await describeStackOutputs(SHOP, clients.cloudformation);
      const logGroupName = stackOutputs.ConsumerLogGroupName as string;
      const key = `o-console-${Date.now()}`;
      const verdict = {
        level: 'INFO',
        message: 'processed',
        messageKey: key,
        messageType: 'OrderPlaced',
        groupId: 'c-1',
        recordId: `ledger#${key}`,
        outcome: 'applied',
      };
      await clients.logs.send(new CreateLogStreamCommand({ logGroupName, logStreamName: 'console-test' }));
      await clients.logs.send(
        new PutLogEventsCommand({
          logGroupName,
          logStreamName: 'console-test',
          logEvents: [{ timestamp: Date.now(), message: JSON.stringify(verdict) }],
        }),
      );
      const child = spawn(process.execPath, [ONCELY_COMMAND, 'console', '--stack', SHOP], { env });
      try {
        const lines = createInterface({ input: child.stdout });
        const url = await new Promise<string>((resolve, reject) => {
          lines.on('line', (line) => {
            const address = /(http:\/\/127\.0\.0\.1:\d+\/)\s+\(it only reads/.exec(line)?.[1];
            if (address) resolve(address);
          });
          child.once('exit', (code) =>
            reject(new Error(`oncely console exited (${code}) before its address`)),
          );
        });
        const overview = (await (await fetch(new URL('api/overview', url))).json()) as {
          functions: { name: string }[];
        };
        const { publisherFunctionName, consumerFunctionName } = await describeDeployedPipeline(
          SHOP,
          clients.cloudformation,
        );
        expect(overview).toMatchObject({ actions: false, queues: [{ role: 'queue' }, { role: 'dlq' }] });
        expect(overview.functions.map((f) => f.name)).toEqual([publisherFunctionName, consumerFunctionName]);
        expect((await fetch(new URL('api/dlq/redrive', url), { method: 'POST' })).status).toBe(403);
        const listed = (await (await fetch(new URL('api/messages', url))).json()) as {
          source: string;
          messages: { key: string; state: string; recordId: string }[];
        };
        expect(listed.source).toBe('logs');
        expect(listed.messages).toContainEqual(
          expect.objectContaining({ key, state: 'applied', recordId: `ledger#${key}` }),
        );
        const story = (await (
          await fetch(new URL(`api/history?key=${key}&namespace=ledger`, url))
        ).json()) as { steps: { source: string; what: string }[] };
        expect(story.steps).toContainEqual(expect.objectContaining({ source: 'log' }));
      } finally {
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        expect(await exited).toEqual([0, null]);
      }
    });

    it('deploys again with no change', { timeout: 300_000 }, async () => {
      const { output } = await deploy(ROOT, SHOP);
      expect(output).toMatch(/no changes/i);
      const again = await readStack(clients, SHOP);
      expect(
        again.resources.map(({ LogicalResourceId, PhysicalResourceId }) => [
          LogicalResourceId,
          PhysicalResourceId,
        ]),
      ).toEqual(
        deployed.resources.map(({ LogicalResourceId, PhysicalResourceId }) => [
          LogicalResourceId,
          PhysicalResourceId,
        ]),
      );
    });

    it('updates a changed consumer timeout in place, replacing no table or queue', {
      timeout: 300_000,
    }, async () => {
      const durable = ['AWS::DynamoDB::Table', 'AWS::SQS::Queue'];
      const before = physicalIds(deployed, durable);
      const { consumerFunctionName } = await describeDeployedPipeline(SHOP, clients.cloudformation);
      const { Timeout: was } = await functionConfiguration(clients, consumerFunctionName);
      const timeout = Number(was) + 15;
      await deploy(ROOT, SHOP, [`consumerTimeoutSeconds=${timeout}`]);
      const updated = await readStack(clients, SHOP);
      expect(updated.status).toBe('UPDATE_COMPLETE');
      expect(Object.keys(before).length).toBeGreaterThanOrEqual(6);
      expect(physicalIds(updated, durable)).toEqual(before);
      expect((await functionConfiguration(clients, consumerFunctionName)).Timeout).toBe(timeout);
      await checkPipeline(updated);
    });

    it('is destroyed whole: the dev stage keeps no data', { timeout: 300_000 }, async () => {
      const resources = await describeDeployedPipeline(SHOP, clients.cloudformation);
      await cdk(ROOT, env, ['destroy', SHOP, '--force', '--output', join(outputs, SHOP)]);
      await expect(readStack(clients, SHOP)).rejects.toThrow(/does not exist/);
      await expect(table(clients, resources.idempotencyTableName)).rejects.toBeInstanceOf(
        ResourceNotFoundException,
      );
      await expect(queueExists(resources.queueUrl)).resolves.toBe(false);
    });
  });

  describe("a user's app, built from the packed tarball", () => {
    let resources: PipelineResources;
    let outboxTable: string;

    it('deploys with every setting at its default', { timeout: 600_000 }, async () => {
      adopter = await createScratchProject(ADOPTER_FILES);
      await deploy(adopter.directory, ADOPTER);
      const deployed = await readStack(clients, ADOPTER);
      expect(deployed.status).toBe('CREATE_COMPLETE');
      resources = await checkPipeline(deployed);
      outboxTable = await checkOutbox(deployed);
    });

    it('deploys a standard queue’s pipeline: standard queues, a large batch, standardBatch’s environment', {
      timeout: 300_000,
    }, async () => {
      expect(adopter).toBeDefined();
      await deploy(String(adopter?.directory), ADOPTER_STANDARD);
      const deployed = await readStack(clients, ADOPTER_STANDARD);
      expect(deployed.status).toBe('CREATE_COMPLETE');
      await checkPipeline(deployed, STANDARD_PIPELINE);
      await cdk(String(adopter?.directory), env, [
        'destroy',
        ADOPTER_STANDARD,
        '--force',
        '--output',
        join(outputs, ADOPTER_STANDARD),
      ]);
      await expect(readStack(clients, ADOPTER_STANDARD)).rejects.toThrow(/does not exist/);
    });

    it('is destroyed, and keeps what RETAIN keeps: its tables and queues', { timeout: 300_000 }, async () => {
      expect(adopter).toBeDefined();
      const directory = String(adopter?.directory);
      await cdk(directory, env, ['destroy', ADOPTER, '--force', '--output', join(outputs, ADOPTER)]);
      await expect(readStack(clients, ADOPTER)).rejects.toThrow(/does not exist/);
      for (const name of [resources.idempotencyTableName, outboxTable]) {
        expect((await table(clients, name)).TableStatus).toBe('ACTIVE');
      }
      for (const url of [resources.queueUrl, resources.dlqUrl])
        await expect(queueExists(url)).resolves.toBe(true);
    });
  });
});

describe('cfn-lint over every synthesised template', () => {
  it('finds no error, and only warnings explained in cfn-lint-explained.ts', {
    timeout: 120_000,
  }, async () => {
    // The shop's stages as deployed above, its production stage, its standard-queue stack, and the user's app.
    await cdk(ROOT, env, ['synth', '-c', 'stage=prod', '--quiet', '--output', join(outputs, 'Shop-prod')]);
    await cdk(ROOT, env, [
      'synth',
      '-c',
      'queueType=standard',
      '--quiet',
      '--output',
      join(outputs, 'Shop-standard'),
    ]);
    const templates = ['Shop-dev', 'Shop-prod', 'Shop-standard', ADOPTER].flatMap((app) =>
      readdirSync(join(outputs, app))
        .filter((name) => name.endsWith('.template.json'))
        .map((name) => join(outputs, app, name)),
    );
    // The user's app synthesises both its stacks: the standard pipeline's template is linted too.
    expect(templates).toHaveLength(5);
    const findings = await cfnLint(templates);
    const show = (finding: CfnLintFinding) => `${finding.Rule.Id} ${finding.Filename}: ${finding.Message}`;
    expect(findings.filter((finding) => finding.Level === 'Error').map(show)).toEqual([]);
    const warnings = findings.filter((finding) => finding.Level === 'Warning');
    expect(warnings.filter((finding) => !(finding.Rule.Id in EXPLAINED_WARNINGS)).map(show)).toEqual([]);
    const raised = new Set(warnings.map((finding) => finding.Rule.Id));
    expect(Object.keys(EXPLAINED_WARNINGS).filter((rule) => !raised.has(rule))).toEqual([]);
  });
});

interface CfnLintFinding {
  Filename: string;
  Level: 'Error' | 'Warning' | 'Informational';
  Message: string;
  Rule: { Id: string };
}

/** cfn-lint's findings (it exits non-zero whenever it finds any: the JSON says which). */
async function cfnLint(templates: string[]): Promise<CfnLintFinding[]> {
  const result = await promisify(execFile)('cfn-lint', ['--format', 'json', ...templates], {
    maxBuffer: 1 << 24,
  }).catch((error: { stdout?: string; code?: unknown; message: string }) => {
    if (typeof error.code !== 'number' || !error.stdout) {
      throw new Error(`cfn-lint could not run (install it: \`pip install cfn-lint\`): ${error.message}`);
    }
    return { stdout: error.stdout };
  });
  return JSON.parse(result.stdout || '[]');
}

/** What a pipeline's queue type changes in what is deployed (DESIGN §5.1). */
interface ExpectedPipeline {
  queueType: 'fifo' | 'standard';
  maxReceiveCount: number;
  batchSize: number;
  /** The event source's window, in seconds; none when absent. */
  maxBatchingWindowSeconds?: number;
  /** The consumer's variable of its middleware's bound, its default, and one its middleware does not read. */
  concurrency: { set: string; value: string; unset: string };
}

const FIFO_PIPELINE: ExpectedPipeline = {
  queueType: 'fifo',
  maxReceiveCount: 50,
  batchSize: 10,
  concurrency: {
    set: CONSUMER_ENVIRONMENT.maxConcurrentGroups,
    value: '10',
    unset: CONSUMER_ENVIRONMENT.maxConcurrentRecords,
  },
};

const STANDARD_PIPELINE: ExpectedPipeline = {
  queueType: 'standard',
  maxReceiveCount: 20,
  batchSize: 100,
  maxBatchingWindowSeconds: 2,
  concurrency: {
    set: CONSUMER_ENVIRONMENT.maxConcurrentRecords,
    value: '100',
    unset: CONSUMER_ENVIRONMENT.maxConcurrentGroups,
  },
};

/**
 * The pipeline of a deployed stack, read through the outputs the oncely command and the
 * end-to-end suite read, checked against DESIGN §7: the queue and its DLQ (FIFO, or standard), the
 * idempotency table, the event source, the functions and their environment, the roles.
 */
async function checkPipeline(
  stack: DeployedStack,
  expected: ExpectedPipeline = FIFO_PIPELINE,
): Promise<PipelineResources> {
  checkWhatMotoCreated(stack);
  const resources = await describeDeployedPipeline(stack.name, clients.cloudformation);
  const consumer = await functionConfiguration(clients, resources.consumerFunctionName);

  const queue = await queueAttributes(clients, resources.queueUrl);
  const dlq = await queueAttributes(clients, resources.dlqUrl);
  if (expected.queueType === 'fifo') {
    expect(resources.queueUrl).toMatch(/\.fifo$/);
    expect(queue).toMatchObject({
      FifoQueue: 'true',
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
    });
    expect(dlq).toMatchObject({ FifoQueue: 'true' });
  } else {
    // moto lists no FifoQueue attribute for a standard queue, as SQS does.
    for (const [url, attributes] of [
      [resources.queueUrl, queue],
      [resources.dlqUrl, dlq],
    ] as const) {
      expect(url).not.toMatch(/\.fifo$/);
      expect(attributes.FifoQueue ?? 'false').toBe('false');
      expect(attributes).not.toHaveProperty('DeduplicationScope');
    }
  }
  expect(queue).toMatchObject({ QueueArn: resources.queueArn, SqsManagedSseEnabled: 'true' });
  expect(JSON.parse(String(queue.RedrivePolicy))).toEqual({
    deadLetterTargetArn: resources.dlqArn,
    maxReceiveCount: expected.maxReceiveCount,
  });
  expect(dlq).toMatchObject({ QueueArn: resources.dlqArn, SqsManagedSseEnabled: 'true' });
  expect(Number(queue.VisibilityTimeout)).toBeGreaterThanOrEqual(6 * Number(consumer.Timeout));
  // The records must outlive every ordinary return of a message (DESIGN §2, §7).
  expect(Number(resources.idempotencyTtlSeconds)).toBeGreaterThan(
    Number(queue.MessageRetentionPeriod) + Number(dlq.MessageRetentionPeriod),
  );

  const records = await table(clients, resources.idempotencyTableName);
  expect(records.KeySchema).toEqual([{ AttributeName: 'id', KeyType: 'HASH' }]);
  expect(records.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
  expect(records.GlobalSecondaryIndexes?.map((index) => index.IndexName).sort()).toEqual(
    [UNRESOLVED_INDEX_NAME, LEGACY_UNRESOLVED_INDEX_NAME].sort(),
  );
  checkIgnoredTableProperties(stack, resources.idempotencyTableName);

  const [mapping, ...others] = await eventSourceMappings(clients, resources.consumerFunctionName);
  expect(others).toEqual([]);
  expect(mapping).toMatchObject({
    EventSourceArn: resources.queueArn,
    BatchSize: expected.batchSize,
    FunctionResponseTypes: ['ReportBatchItemFailures'],
    State: 'Enabled',
  });
  expect(mapping?.MaximumBatchingWindowInSeconds ?? 0).toBe(expected.maxBatchingWindowSeconds ?? 0);

  for (const fn of stack.resources.filter((resource) => resource.ResourceType === 'AWS::Lambda::Function')) {
    const configuration = await functionConfiguration(clients, String(fn.PhysicalResourceId));
    expect(configuration).toMatchObject({ Runtime: 'nodejs24.x', Handler: 'index.handler' });
    const template = stack.template.Resources[String(fn.LogicalResourceId)];
    expect(template?.Properties?.Architectures).toEqual(['arm64']);
  }
  expect(consumer.Environment?.Variables).toMatchObject({
    [CONSUMER_ENVIRONMENT.idempotencyTableName]: resources.idempotencyTableName,
    [CONSUMER_ENVIRONMENT.idempotencyTtlSeconds]: resources.idempotencyTtlSeconds,
    [CONSUMER_ENVIRONMENT.dlqUrl]: resources.dlqUrl,
    [CONSUMER_ENVIRONMENT.queueUrl]: resources.queueUrl,
    [expected.concurrency.set]: expected.concurrency.value,
  });
  expect(consumer.Environment?.Variables).not.toHaveProperty(expected.concurrency.unset);

  const tableArn = String(records.TableArn);
  const consumerRole = await roleStatements(clients, String(consumer.Role));
  expect(actionsOn(consumerRole, tableArn)).toEqual(
    ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'].sort(),
  );
  expect(actionsOn(consumerRole, resources.dlqArn)).toEqual(['sqs:SendMessage']);
  expect(actionsOn(consumerRole, resources.queueArn)).not.toContain('sqs:SendMessage');
  // standardBatch's retry backoff; the event source's grant has it on either queue type.
  expect(actionsOn(consumerRole, resources.queueArn)).toContain('sqs:ChangeMessageVisibility');
  const publisher = await functionConfiguration(clients, resources.publisherFunctionName);
  const publisherRole = await roleStatements(clients, String(publisher.Role));
  expect(actionsOn(publisherRole, resources.queueArn)).toEqual(['sqs:SendMessage']);
  // moto enforces no IAM: the template tests check the conditions that confine these to the
  // publisher's own records (test/stack/grants.test.ts), and that each is a request it sends.
  expect(actionsOn(publisherRole, tableArn)).toEqual(
    ['dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'].sort(),
  );
  for (const statement of [...consumerRole, ...publisherRole]) {
    expect([statement.Resource].flat()).not.toContain('*');
  }
  return resources;
}

/** The outbox of a deployed stack, by its outputs: its table's stream and index, and the relay on the stream. */
async function checkOutbox(stack: DeployedStack): Promise<string> {
  const outbox = outboxFromOutputs(`stack ${stack.name}`, stack.outputs);
  const outboxTable = await table(clients, outbox.tableName);
  expect(outboxTable.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: 'NEW_IMAGE' });
  expect(outboxTable.GlobalSecondaryIndexes?.map((index) => index.IndexName)).toContain(OUTBOX_PENDING_INDEX);
  checkIgnoredTableProperties(stack, outbox.tableName);
  const relays = await Promise.all(
    stack.resources
      .filter((resource) => resource.ResourceType === 'AWS::Lambda::Function')
      .map(async (fn) => eventSourceMappings(clients, String(fn.PhysicalResourceId))),
  );
  const onStream = relays.flat().filter((mapping) => mapping.EventSourceArn === outboxTable.LatestStreamArn);
  expect(onStream).toHaveLength(1);
  expect(onStream[0]).toMatchObject({
    FunctionResponseTypes: ['ReportBatchItemFailures'],
    StartingPosition: 'TRIM_HORIZON',
    State: 'Enabled',
  });
  expect(onStream[0]?.FilterCriteria?.Filters).toHaveLength(1);
  expect(onStream[0]?.DestinationConfig?.OnFailure?.Destination).toMatch(/^arn:aws:sqs:/);
  return outbox.tableName;
}

/** Everything of the template exists, but for the types moto is known to skip. */
function checkWhatMotoCreated(stack: DeployedStack): void {
  const listed = new Set(stack.resources.map((resource) => resource.LogicalResourceId));
  const skipped = Object.entries(stack.template.Resources).filter(([logicalId]) => !listed.has(logicalId));
  expect(
    skipped.map(([, resource]) => resource.Type).filter((type) => !MOTO_CREATES_NOT.includes(type)),
  ).toEqual([]);
  const counts = new Map<string, number>();
  for (const [, { Type }] of skipped) counts.set(Type, (counts.get(Type) ?? 0) + 1);
  for (const [type, count] of counts) {
    notes.push(
      `- ${type}: moto's CloudFormation creates none (${count} in ${stack.name}); test/stack checks them in the template`,
    );
  }
}

/** What moto ignores of a table, read from the template CloudFormation holds. */
function checkIgnoredTableProperties(stack: DeployedStack, tableName: string): void {
  const [logicalId] =
    Object.entries(physicalIds(stack, ['AWS::DynamoDB::Table'])).find(([, name]) => name === tableName) ?? [];
  const properties = stack.template.Resources[String(logicalId)]?.Properties ?? {};
  expect(properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAt', Enabled: true });
  expect(properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
  for (const ignored of MOTO_IGNORES)
    notes.push(`- ${ignored}: moto ignores it; checked in the deployed template`);
}

async function queueExists(queueUrl: string): Promise<boolean> {
  const QueueName = queueUrl.split('/').at(-1);
  try {
    await clients.sqs.send(new GetQueueUrlCommand({ QueueName }));
    return true;
  } catch (error) {
    if (error instanceof QueueDoesNotExist) return false;
    throw error;
  }
}

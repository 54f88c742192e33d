import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Target } from '../../../cli/command-line.js';
import { isFifoQueueUrl } from '../../../lambdas/common/queue-type.js';
import { describeDeployedPipeline } from '../../../lib/constructs/deployed-pipeline.js';
import type { PipelineResources } from '../../../lib/constructs/pipeline-outputs.js';
import { LEDGER_TABLE_OUTPUT, ORDERS_OUTPUTS } from '../../../lib/shop/shop-stack.js';
import { localAwsConfig } from '../../../sandbox/local-aws-config.js';
import { startSandbox } from '../../../sandbox/local-sandbox.js';
import { sharedAssembly } from '../../support/shared-assembly.js';

/** The shop's CDK app: the directory of its cdk.json. */
const SHOP_APP = fileURLToPath(new URL('../../..', import.meta.url));

/** A running pipeline the end-to-end suite drives, whatever it runs on. */
export interface E2eTarget {
  kind: 'sandbox' | 'stack';
  /** The pipeline's queue type, as its queue's URL says (`.fifo` or not). */
  queueType: 'fifo' | 'standard';
  resources: PipelineResources;
  /** The shop's ledger: its stack's own output, beside the pipeline's. */
  ledgerTableName: string;
  /** The orders service: its PlaceOrder function and its table, which holds its outbox. */
  orders: { placeOrderFunctionName: string; tableName: string };
  lambda: LambdaClient;
  sqs: SQSClient;
  dynamodb: DynamoDBClient;
  /** Where `oncely` commands find it: the stack by name, or the sandbox by its ready file. */
  operations: Target;
  /** A sandbox's count of the records its consumer received, copies included; a stack has none. */
  receivedRecords?: () => number;
  stop(): Promise<void>;
}

/**
 * The queue type the suite is run for, which chooses its cases: `ONCELY_QUEUE_TYPE` (`fifo` by
 * default, or `standard`). On the sandbox it also chooses the stack to start; a stack target must
 * be of that type (`startTarget` checks), since the cases are chosen before the target is reached.
 */
export function declaredQueueType(env: NodeJS.ProcessEnv = process.env): 'fifo' | 'standard' {
  const queueType = env.ONCELY_QUEUE_TYPE ?? 'fifo';
  if (queueType !== 'fifo' && queueType !== 'standard') {
    throw new Error(`ONCELY_QUEUE_TYPE must be fifo (the default) or standard, not ${queueType}.`);
  }
  return queueType;
}

/**
 * Where the sandbox's shop keeps its consumer's lease records: `ONCELY_LEASE_RECORDS` (`dynamodb` by
 * default, or `valkey`: the shop's `leaseRecords=valkey` context, its cache on a local redis-server).
 */
export function declaredLeaseRecords(env: NodeJS.ProcessEnv = process.env): 'dynamodb' | 'valkey' {
  const leaseRecords = env.ONCELY_LEASE_RECORDS ?? 'dynamodb';
  if (leaseRecords !== 'dynamodb' && leaseRecords !== 'valkey') {
    throw new Error(`ONCELY_LEASE_RECORDS must be dynamodb (the default) or valkey, not ${leaseRecords}.`);
  }
  return leaseRecords;
}

const queueTypeOf = (resources: PipelineResources) =>
  isFifoQueueUrl(resources.queueUrl) ? ('fifo' as const) : ('standard' as const);

/**
 * The target comes from the environment: `ONCELY_TARGET=stack` with `ONCELY_STACK_NAME` runs the
 * suite against a deployed stack (AWS with the usual credentials, or LocalStack with
 * `AWS_ENDPOINT_URL`), of the queue type `ONCELY_QUEUE_TYPE` declares; otherwise against a fresh local sandbox of the shop's
 * app: its FIFO stack, or with `ONCELY_QUEUE_TYPE=standard` its standard one (context
 * `queueType=standard`), every batch delivered twice at once and again later, as SQS may.
 */
export async function startTarget(env: NodeJS.ProcessEnv = process.env): Promise<E2eTarget> {
  if (env.ONCELY_TARGET === 'stack') {
    const stackName = env.ONCELY_STACK_NAME;
    if (!stackName) throw new Error('ONCELY_TARGET=stack needs ONCELY_STACK_NAME, e.g. Shop-dev.');
    const cloudformation = new CloudFormationClient({});
    try {
      const resources = await describeDeployedPipeline(stackName, cloudformation);
      const declared = declaredQueueType(env);
      if (queueTypeOf(resources) !== declared) {
        throw new Error(
          `Stack ${stackName}'s queue is ${queueTypeOf(resources)}, not ${declared}: set ONCELY_QUEUE_TYPE=${queueTypeOf(resources)}.`,
        );
      }
      const outputs = await stackOutputs(cloudformation, stackName);
      const { ledgerTableName, orders } = shopOutputs(outputs, `Stack ${stackName}`);
      const clients = {
        lambda: new LambdaClient({}),
        sqs: new SQSClient({}),
        dynamodb: new DynamoDBClient({}),
      };
      return {
        kind: 'stack',
        operations: { kind: 'stack', stackName },
        queueType: queueTypeOf(resources),
        resources,
        ledgerTableName,
        orders,
        ...clients,
        stop: async () => destroy(clients),
      };
    } finally {
      cloudformation.destroy();
    }
  }
  if (env.ONCELY_TARGET && env.ONCELY_TARGET !== 'sandbox') {
    throw new Error(`ONCELY_TARGET must be sandbox (the default) or stack, not ${env.ONCELY_TARGET}.`);
  }
  const queueType = declaredQueueType(env);
  const leaseRecords = declaredLeaseRecords(env);
  let receivedRecords = 0;
  const sandbox = await startSandbox({
    appDirectory: SHOP_APP,
    functionOutput: () => undefined,
    // One synthesis of each queue type (and lease records' store) for the whole test run.
    cloudAssembly: await sharedAssembly(SHOP_APP, {
      ...(queueType === 'standard' ? { queueType } : {}),
      ...(leaseRecords === 'valkey' ? { leaseRecords } : {}),
    }),
    ...(queueType === 'standard' ? { duplicateDeliveries: true } : {}),
    onBatch: (_functionName, report) => {
      receivedRecords += report.received;
    },
  });
  const { endpoints, outputs } = sandbox.description;
  let shop: ReturnType<typeof shopOutputs>;
  try {
    shop = shopOutputs(outputs, `The shop's app in ${SHOP_APP}`);
  } catch (error) {
    await sandbox.stop();
    throw error;
  }
  const clients = {
    lambda: new LambdaClient(localAwsConfig(endpoints.lambda)),
    sqs: new SQSClient(localAwsConfig(endpoints.sqs)),
    dynamodb: new DynamoDBClient(localAwsConfig(endpoints.dynamodb)),
  };
  const resources = sandbox.pipelineResources();
  // As `oncely local` writes it, for the commands the suite runs.
  const directory = mkdtempSync(join(tmpdir(), 'oncely-e2e-'));
  const readyFile = join(directory, 'ready.json');
  writeFileSync(readyFile, JSON.stringify(sandbox.description));
  return {
    kind: 'sandbox',
    operations: { kind: 'sandbox', readyFile },
    queueType: queueTypeOf(resources),
    resources,
    ...shop,
    ...clients,
    receivedRecords: () => receivedRecords,
    stop: async () => {
      destroy(clients);
      await sandbox.stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** A deployed stack's outputs, by key. */
async function stackOutputs(
  cloudformation: CloudFormationClient,
  stackName: string,
): Promise<Record<string, string>> {
  const { Stacks } = await cloudformation.send(new DescribeStacksCommand({ StackName: stackName }));
  return Object.fromEntries(
    (Stacks?.[0]?.Outputs ?? []).map((output) => [output.OutputKey ?? '', output.OutputValue ?? '']),
  );
}

/** The shop's own outputs, beside the pipeline's; `where` names the stack or app when one is missing. */
function shopOutputs(outputs: Record<string, string>, where: string) {
  const keys = [LEDGER_TABLE_OUTPUT, ORDERS_OUTPUTS.placeOrderFunctionName, ORDERS_OUTPUTS.ordersTableName];
  const missing = keys.filter((key) => !outputs[key]);
  if (missing.length > 0) {
    throw new Error(`${where} has no output ${missing.join(', ')}: is it the shop's stack (Shop-<stage>)?`);
  }
  return {
    ledgerTableName: String(outputs[LEDGER_TABLE_OUTPUT]),
    orders: {
      placeOrderFunctionName: String(outputs[ORDERS_OUTPUTS.placeOrderFunctionName]),
      tableName: String(outputs[ORDERS_OUTPUTS.ordersTableName]),
    },
  };
}

function destroy(clients: { lambda: LambdaClient; sqs: SQSClient; dynamodb: DynamoDBClient }): void {
  clients.lambda.destroy();
  clients.sqs.destroy();
  clients.dynamodb.destroy();
}

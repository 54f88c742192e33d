import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { inProcessFunction } from '../sandbox/in-process-function.js';
import type { LocalInvoker } from '../sandbox/lambda-context.js';
import { startLambdaInvokeEndpoint } from '../sandbox/lambda-invoke-endpoint.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import { createIdempotencyTable, createKeyedTable } from '../sandbox/tables.js';
import { type FaultProxy, startFaultProxy } from './fault-proxy.js';

/** The emulators a run uses: DynamoDB Local and the SQS emulator, already running. */
export interface Emulators {
  dynamodb: string;
  sqs: string;
}

/**
 * What every schedule of one worker shares: fault proxies in front of the emulators, one
 * idempotency table and one effects table (schedules keep apart by their keys), clients that see
 * the truth without faults, and a Lambda Invoke endpoint for the publishers. Schedules of one world
 * run one after the other, since its proxies follow one schedule's plan at a time.
 */
export interface ChaosWorld {
  readonly dynamodbProxy: FaultProxy;
  readonly sqsProxy: FaultProxy;
  readonly idempotencyTable: string;
  readonly effectsTable: string;
  /** Direct clients: what the harness reads and what Lambda's event source does are not faulted. */
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly lambda: LambdaClient;
  /** Registers a function with the Invoke endpoint; returns its name. */
  register(name: string, handler: (event: unknown, context: Context) => unknown): string;
  unregister(name: string): void;
  close(): Promise<void>;
}

let worlds = 0;

export async function openChaosWorld(emulators: Emulators): Promise<ChaosWorld> {
  const world = ++worlds;
  const [dynamodbProxy, sqsProxy] = await Promise.all([
    startFaultProxy({ service: 'dynamodb', upstream: emulators.dynamodb }),
    startFaultProxy({ service: 'sqs', upstream: emulators.sqs }),
  ]);
  const dynamodb = new DynamoDBClient(localAwsConfig(emulators.dynamodb));
  const sqs = new SQSClient(localAwsConfig(emulators.sqs));
  const suffix = `${process.pid}-${world}-${Date.now().toString(36)}`;
  const idempotencyTable = `chaos-idem-${suffix}`;
  const effectsTable = `chaos-effects-${suffix}`;
  await Promise.all([
    createIdempotencyTable(dynamodb, idempotencyTable),
    createKeyedTable(dynamodb, effectsTable),
  ]);
  const functions: Record<string, LocalInvoker> = {};
  const endpoint = await startLambdaInvokeEndpoint({ functions });
  // One attempt per call: the client retries itself, with the same requestId.
  const lambda = new LambdaClient({ ...localAwsConfig(endpoint.endpoint), maxAttempts: 1 });
  return {
    dynamodbProxy,
    sqsProxy,
    idempotencyTable,
    effectsTable,
    dynamodb,
    sqs,
    lambda,
    register(name, handler) {
      functions[name] = inProcessFunction({
        name,
        arn: endpoint.functionArn(name),
        timeoutMs: 30_000,
        handler,
      });
      return name;
    },
    unregister(name) {
      delete functions[name];
    },
    async close() {
      lambda.destroy();
      await endpoint.stop();
      await Promise.all([dynamodbProxy.close(), sqsProxy.close()]);
      dynamodb.destroy();
      sqs.destroy();
    },
  };
}

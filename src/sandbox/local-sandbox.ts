import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { type PipelineResources, resourcesFromOutputs } from '../cdk/stack-outputs.js';
import { startDynamoDbLocal } from './dynamodb-local.js';
import { type BatchReport, startEventSourcePoller } from './event-source-poller.js';
import { type FunctionOutput, LocalFunctionRuntime } from './function-runtime.js';
import type { InvocationResult } from './lambda-context.js';
import { startLambdaInvokeEndpoint } from './lambda-invoke-endpoint.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION, localAwsConfig } from './local-aws-config.js';
import { type NotEmulatedResource, type ProvisionedStack, provisionTemplate } from './provision.js';
import { startScheduleRunner } from './schedule-runner.js';
import { startSqsEmulator } from './sqs-emulator.js';
import { synthesizeTemplate } from './synthesize.js';

/**
 * Context the sandbox synthesises with unless told otherwise: a `local` stage; a short consumer
 * timeout, so that a failed batch comes back after 6 × 2 s instead of minutes; and 4 concurrent
 * consumer invocations — each a worker thread loading its own SDK, on a laptop's few cores, while
 * one invocation already runs 10 message groups at once.
 */
export const SANDBOX_CONTEXT = { stage: 'local', consumerTimeoutSeconds: 2, maxConcurrency: 4 };

/** Where the functions reach SQS and DynamoDB. */
export interface ServiceEndpoints {
  sqs: string;
  dynamodb: string;
}

export interface SandboxOptions {
  /** CDK context for the synth (overrides {@link SANDBOX_CONTEXT}). */
  context?: Record<string, unknown>;
  /**
   * Routes the functions' SQS and DynamoDB requests elsewhere once the emulators run — e.g. through
   * a fault-injecting proxy in front of them. The pollers and the ready file keep the emulators'.
   */
  routeFunctions?: (emulators: ServiceEndpoints) => Promise<ServiceEndpoints> | ServiceEndpoints;
  /** Environment variables set on every function, over the template's (`--env NAME=VALUE`). */
  environment?: Record<string, string>;
  /** Receives every line the functions write; by default it goes to this process's output. */
  functionOutput?: FunctionOutput;
  /** Called after each batch an event source delivered. */
  onBatch?: (functionName: string, report: BatchReport) => void;
  /**
   * Runs every schedule rule at this interval instead of its rate, e.g. the unresolved-records
   * monitor every few seconds in a test. Only the clock changes: the template, and so the
   * topology, is the one `cdk deploy` deploys. By default each rule's own rate.
   */
  scheduleIntervalMs?: number;
  /** Called after each invocation of a scheduled function, with the rule's name. */
  onScheduledRun?: (ruleName: string, functionName: string, result: InvocationResult) => void;
  projectRoot?: string;
}

/** What clients need to use the sandbox: the ready file's content. */
export interface SandboxDescription {
  region: string;
  stackName: string;
  endpoints: { sqs: string; dynamodb: string; lambda: string };
  resources: PipelineResources;
  notEmulated: NotEmulatedResource[];
}

export interface Sandbox {
  readonly description: SandboxDescription;
  readonly provisioned: ProvisionedStack;
  /** Invokes a function of the stack by name, as Lambda would. */
  invoke(functionName: string, event: unknown): Promise<InvocationResult>;
  stop(): Promise<void>;
}

/** Raised when an invocation names a function the stack does not have. */
export class UnknownFunctionError extends Error {
  override readonly name = 'UnknownFunctionError';
}

/**
 * The whole pipeline on loopback: DynamoDB Local and the SQS emulator, provisioned from the
 * synthesised stack, its functions run in-process (worker threads), its event sources polled with
 * Lambda's rules, its schedule rules run on their rate, and a Lambda Invoke endpoint serving its
 * functions.
 * Whatever fails during start-up stops what had started.
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const step of stops.reverse()) await step();
  };
  try {
    const [dynamodbLocal, sqsEmulator] = await Promise.all([startDynamoDbLocal(), startSqsEmulator()]);
    stops.push(
      () => dynamodbLocal.stop(),
      () => sqsEmulator.stop(),
    );
    const sqs = new SQSClient(localAwsConfig(sqsEmulator.endpoint));
    const dynamodb = new DynamoDBClient(localAwsConfig(dynamodbLocal.endpoint));
    stops.push(async () => {
      sqs.destroy();
      dynamodb.destroy();
    });

    const { stackName, template } = synthesizeTemplate({ ...SANDBOX_CONTEXT, ...options.context });
    const provisioned = await provisionTemplate(template, {
      sqs,
      dynamodb,
      stackName,
      region: LOCAL_REGION,
      accountId: LOCAL_ACCOUNT_ID,
    });

    const emulators = { sqs: sqsEmulator.endpoint, dynamodb: dynamodbLocal.endpoint };
    const routed = options.routeFunctions ? await options.routeFunctions(emulators) : emulators;
    const awsEnvironment = {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_ENDPOINT_URL_SQS: routed.sqs,
      AWS_ENDPOINT_URL_DYNAMODB: routed.dynamodb,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
    const runtimes = new Map(
      provisioned.functions.map((fn) => [
        fn.name,
        new LocalFunctionRuntime(
          { ...fn, environment: { ...fn.environment, ...awsEnvironment, ...options.environment } },
          options.projectRoot ?? process.cwd(),
          options.functionOutput,
        ),
      ]),
    );
    stops.push(async () => {
      await Promise.all([...runtimes.values()].map((runtime) => runtime.stop()));
    });
    const invoke = (functionName: string, event: unknown) => {
      const runtime =
        runtimes.get(functionName) ?? [...runtimes.values()].find((r) => r.spec.arn === functionName);
      if (!runtime) {
        throw new UnknownFunctionError(
          `Function not found: ${functionName}. It has ${[...runtimes.keys()].join(', ')}.`,
        );
      }
      return runtime.invoke(event);
    };
    const lambda = await startLambdaInvokeEndpoint({ functions: Object.fromEntries(runtimes) });
    stops.push(() => lambda.stop());

    for (const source of provisioned.eventSources) {
      const poller = startEventSourcePoller({
        sqs,
        source,
        region: LOCAL_REGION,
        invoke: (event: SQSEvent) => invoke(source.functionName, event),
        onBatch: (report) => options.onBatch?.(source.functionName, report),
      });
      // Pollers stop before the functions and emulators they use.
      stops.push(() => poller.stop());
    }
    for (const schedule of provisioned.schedules) {
      const runner = startScheduleRunner({
        schedule,
        intervalMs: options.scheduleIntervalMs,
        region: LOCAL_REGION,
        accountId: LOCAL_ACCOUNT_ID,
        invoke,
        onRun: (functionName, result) => options.onScheduledRun?.(schedule.name, functionName, result),
      });
      stops.push(() => runner.stop());
    }

    return {
      description: {
        region: LOCAL_REGION,
        stackName,
        endpoints: { sqs: sqsEmulator.endpoint, dynamodb: dynamodbLocal.endpoint, lambda: lambda.endpoint },
        resources: resourcesFromOutputs(stackName, provisioned.outputs),
        notEmulated: provisioned.notEmulated,
      },
      provisioned,
      invoke,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBStreamEvent, SQSEvent } from 'aws-lambda';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import {
  MissingStackOutputsError,
  PIPELINE_OUTPUTS,
  type PipelineResources,
  resourcesFromOutputs,
} from '../lib/constructs/pipeline-outputs.js';
import type { AsyncAttempt, AsyncInvokeConfig } from './async-invocation.js';
import { type Deployment, describeDeployment } from './deployment.js';
import { startDynamoDbLocal } from './dynamodb-local.js';
import { startEdgeEndpoint } from './edge-endpoint.js';
import { type BatchReport, startEventSourcePoller } from './event-source-poller.js';
import { limitConcurrency } from './function-concurrency.js';
import { type FunctionOutput, type FunctionUsage, LocalFunctionRuntime } from './function-runtime.js';
import type { InvocationResult, LocalInvoker } from './lambda-context.js';
import { startLambdaInvokeEndpoint } from './lambda-invoke-endpoint.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION, localAwsConfig } from './local-aws-config.js';
import { forgetNodeBinaries, installLambdaNode, lambdaNodeCache, nodeBinaryFor } from './node-binary.js';
import { residentBytes } from './process-memory.js';
import { type ProvisionedStack, provisionTemplate } from './provision.js';
import { provideRuntimeModules } from './runtime-modules.js';
import { startScheduleRunner } from './schedule-runner.js';
import { startSqsEmulator } from './sqs-emulator.js';
import { type StreamBatchReport, startStreamPoller } from './stream-poller.js';
import { synthesizeApp } from './synthesize.js';

/** Where the functions reach SQS and DynamoDB. */
export interface ServiceEndpoints {
  sqs: string;
  dynamodb: string;
}

export interface SandboxOptions {
  /** The CDK app to run: the directory of its cdk.json. The current directory by default. */
  appDirectory?: string;
  /** CDK context for the synth, over cdk.json's and cdk.context.json's (`--context KEY=VALUE`). */
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
  /**
   * Freezes each function's container between invocations, as Lambda does, so that what a handler
   * left running does not complete after its answer (function-runtime.ts). True by default.
   */
  freezeFunctions?: boolean;
  /**
   * Installs the Node.js major a function's runtime names from the npm registry into the app's
   * `.oncely/node-<major>` when neither this machine's Node nor an installed one has it (once; about
   * 190 MB for Node 24), rather than running the function on this machine's Node. `false` by default.
   */
  installNode?: boolean;
  /** Called after each batch an SQS event source delivered. */
  onBatch?: (functionName: string, report: BatchReport) => void;
  /** Called after each invocation with a batch of a DynamoDB-stream event source. */
  onStreamBatch?: (functionName: string, report: StreamBatchReport) => void;
  /**
   * Runs every schedule rule at this interval instead of its rate, e.g. the unresolved-records
   * monitor every few seconds in a test. Only the clock changes: the template, and so the
   * topology, is the one `cdk deploy` deploys. By default each rule's own rate.
   */
  scheduleIntervalMs?: number;
  /**
   * The waits before the first and the second retry of a failed asynchronous invocation (a
   * scheduled run's, an `Invoke` with `InvocationType: Event`), e.g. `[100, 100]` in a test. By
   * default Lambda's own: 1 minute, then 2.
   */
  asyncRetryDelaysMs?: readonly number[];
  /** Called after each invocation of a scheduled function (its retries included), with the rule's name. */
  onScheduledRun?: (
    ruleName: string,
    functionName: string,
    result: InvocationResult,
    attempt: AsyncAttempt,
  ) => void;
  /**
   * Harsher than SQS, for tests: each FIFO receive returns one message group's messages only, so a
   * consumer's handling of the groups it skips after a failure runs on every batch. `false` by
   * default: as SQS, as many of one group as it can, then other groups' (see startSqsEmulator).
   */
  oneGroupPerReceive?: boolean;
  /**
   * Delivers each batch of a standard queue to two invocations at once, then once more after both
   * answered, as SQS's at-least-once delivery may (event-source-poller.ts), so that a test or the
   * demo sees its duplicates, concurrent and late. Each copy is a receive of its own, with its own
   * receipt handle: a delete or visibility change with an earlier copy's does what SQS documents
   * (nothing; refused). FIFO queues are not affected. `false` by default.
   */
  duplicateDeliveries?: boolean;
}

/** What clients need to use the sandbox: the ready file's content. */
export interface SandboxDescription {
  region: string;
  /** The stack that holds the OncelyPipeline, else the app's first stack. */
  stackName: string;
  /** `edge` answers for all three services, as LocalStack's one endpoint does. */
  endpoints: { edge: string; sqs: string; dynamodb: string; lambda: string };
  /** The pipeline's resources, from its stack's outputs; absent when the app has no OncelyPipeline. */
  resources?: PipelineResources;
  /** Every output of the app's stacks, resolved locally (a key two stacks share: the later stack's). */
  outputs: Record<string, string>;
  notEmulated: ProvisionedStack['notEmulated'];
}

/** What the app's stacks amount to locally, all together, and each stack's own. */
export interface ProvisionedApp
  extends Pick<
    ProvisionedStack,
    'queues' | 'tables' | 'functions' | 'eventSources' | 'streamSources' | 'schedules' | 'notEmulated'
  > {
  stacks: ProvisionedStack[];
}

export interface Sandbox {
  readonly description: SandboxDescription;
  readonly provisioned: ProvisionedApp;
  /** The synthesised cloud assembly the functions run from; removed on stop. */
  readonly assemblyDirectory: string;
  /** The pipeline's resources; throws {@link NoPipelineError} when the app has no OncelyPipeline. */
  pipelineResources(): PipelineResources;
  /** What the functions and the emulators use now: `npm run soak` samples it through its run. */
  usage(): SandboxUsage;
  /** Invokes a function of the app by name or ARN, as Lambda would. */
  invoke(functionName: string, event: unknown): Promise<InvocationResult>;
  /** Stops everything it started, DynamoDB Local's JVM included, and removes the cloud assembly. */
  stop(): Promise<void>;
}

export interface SandboxUsage {
  /** Each function's containers: CPU, invocations and heap per running container ({@link FunctionUsage}). */
  functions: Record<string, FunctionUsage>;
  /** DynamoDB Local's JVM, resident; `undefined` without Linux's /proc. */
  dynamodbLocalResidentBytes: number | undefined;
  /**
   * This process's V8 heap in use: the SQS emulator runs in it, with the pollers, the schedules and
   * whatever the caller keeps.
   */
  hostHeapUsedBytes: number;
}

/** Raised when an invocation names a function the app does not have. */
export class UnknownFunctionError extends OncelyError {
  static override readonly errorName: string = 'UnknownFunctionError';
  readonly retryable = false;
}

/** The app has no OncelyPipeline (no stack has its outputs), so there are no pipeline resources to use. */
export class NoPipelineError extends OncelyError {
  static override readonly errorName: string = 'NoPipelineError';
  readonly retryable = false;
}

/** Oncely's own directory: its dependencies provide the AWS SDK when the app has none installed. */
const ONCELY_DIRECTORY = fileURLToPath(new URL('.', import.meta.url));

/**
 * A CDK app on loopback, as `cdk deploy` would deploy it: synthesised with bundling from its
 * cdk.json, every stack's queues and tables created in the SQS emulator and DynamoDB Local, its
 * functions run from their bundled assets in child processes, its event sources polled with Lambda's
 * rules, its schedule rules run on their rate, a Lambda Invoke endpoint serving its functions, and
 * one edge port in front of all three services.
 * Whatever fails during start-up stops what had started.
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const stops: (() => Promise<void> | void)[] = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      let failure: unknown;
      for (const step of stops.reverse()) {
        try {
          await step();
        } catch (error) {
          failure ??= error;
        }
      }
      if (failure !== undefined) throw failure;
    })());
  const started = async <T>(starting: Promise<T>, stopOf: (value: T) => Promise<void> | void) => {
    const value = await starting;
    stops.push(() => stopOf(value));
    return value;
  };
  try {
    const appDirectory = resolve(options.appDirectory ?? '.');
    // The synth takes longest (a bundler per function): the emulators start meanwhile.
    const starting = [
      started(synthesizeApp({ appDirectory, context: options.context }), (assembly) => assembly.remove()),
      started(startDynamoDbLocal(), (dynamodbLocal) => dynamodbLocal.stop()),
      started(startSqsEmulator({ oneGroupPerReceive: options.oneGroupPerReceive }), (sqsEmulator) =>
        sqsEmulator.stop(),
      ),
    ] as const;
    // Every part has started or failed before any failure is thrown, so that stop() finds them all.
    await Promise.allSettled(starting);
    const [assembly, dynamodbLocal, sqsEmulator] = await Promise.all(starting);
    provideRuntimeModules(assembly.directory, [appDirectory, ONCELY_DIRECTORY]);

    const sqs = new SQSClient(localAwsConfig(sqsEmulator.endpoint));
    const dynamodb = new DynamoDBClient(localAwsConfig(dynamodbLocal.endpoint));
    const streams = new DynamoDBStreamsClient(localAwsConfig(dynamodbLocal.endpoint));
    stops.push(() => {
      sqs.destroy();
      dynamodb.destroy();
      streams.destroy();
    });
    // Served by name, and filled once the stacks are provisioned: Lambda too knows no function
    // before the deploy.
    const functions: Record<string, LocalInvoker> = {};
    // Likewise CloudFormation and Lambda describe nothing until the stacks are provisioned.
    let deployment: Deployment | undefined;
    // Each function's asynchronous-invocation config, filled with the functions.
    const asyncInvokeConfigs = new Map<string, AsyncInvokeConfig | undefined>();
    const asyncInvocation = {
      configOf: (name: string) => asyncInvokeConfigs.get(name),
      retryDelaysMs: options.asyncRetryDelaysMs,
    };
    const lambda = await started(startLambdaInvokeEndpoint({ functions, asyncInvocation }), (endpoint) =>
      endpoint.stop(),
    );
    const edge = await started(
      startEdgeEndpoint({
        targets: { sqs: sqsEmulator.endpoint, dynamodb: dynamodbLocal.endpoint, lambda: lambda.endpoint },
        deployment: () => deployment,
      }),
      (endpoint) => endpoint.stop(),
    );
    // Queue URLs name the edge, as LocalStack's name its one endpoint: a client whose only
    // configuration is AWS_ENDPOINT_URL then sends to the host of a queue's URL what it would
    // anyway (the SDK prefers that host to its endpoint when the two differ).
    sqsEmulator.nameQueuesAt(edge.port);

    const stacks: ProvisionedStack[] = [];
    const exports = new Map<string, string>();
    for (const stack of assembly.stacks) {
      const provisioned = await provisionTemplate(stack.template, {
        sqs,
        dynamodb,
        stackName: stack.stackName,
        region: LOCAL_REGION,
        accountId: LOCAL_ACCOUNT_ID,
        assemblyDirectory: stack.assemblyDirectory,
        exports,
      });
      for (const [name, value] of provisioned.exports) exports.set(name, value);
      stacks.push(provisioned);
    }
    const provisioned: ProvisionedApp = {
      stacks,
      queues: stacks.flatMap((stack) => stack.queues),
      tables: stacks.flatMap((stack) => stack.tables),
      functions: stacks.flatMap((stack) => stack.functions),
      eventSources: stacks.flatMap((stack) => stack.eventSources),
      streamSources: stacks.flatMap((stack) => stack.streamSources),
      schedules: stacks.flatMap((stack) => stack.schedules),
      notEmulated: stacks.flatMap((stack) => stack.notEmulated),
    };

    const emulators = { sqs: sqsEmulator.endpoint, dynamodb: dynamodbLocal.endpoint };
    const routed = options.routeFunctions ? await options.routeFunctions(emulators) : emulators;
    const awsEnvironment = {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      // Any other service the functions call answers at the edge (Lambda), or says it is not emulated.
      AWS_ENDPOINT_URL: edge.endpoint,
      AWS_ENDPOINT_URL_SQS: routed.sqs,
      AWS_ENDPOINT_URL_DYNAMODB: routed.dynamodb,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
    // A function's queue URLs name the SQS endpoint it is given, as on AWS: the SDK would send to
    // the URL's host instead (with a warning on every request), past a routed proxy.
    const queueUrlForFunctions = new Map(
      provisioned.queues.map((queue) => [queue.url, new URL(new URL(queue.url).pathname, routed.sqs).href]),
    );
    if (options.installNode) installMissingNodes(provisioned.functions, appDirectory);
    const runtimes = new Map(
      provisioned.functions.map((fn) => {
        const variables = Object.entries(fn.environment).map(([name, value]) => [
          name,
          queueUrlForFunctions.get(value) ?? value,
        ]);
        const environment = { ...Object.fromEntries(variables), ...awsEnvironment, ...options.environment };
        const runtime = new LocalFunctionRuntime({ ...fn, environment }, options.functionOutput, {
          freeze: options.freezeFunctions,
          projectDirectory: appDirectory,
        });
        if (!runtime.node.matches) {
          console.warn(
            `oncely local: function ${fn.name} (${fn.runtime}) runs on this machine's Node.js ${runtime.node.version}: no Node.js ${runtime.node.wantedMajor} found (add --install-node to install it once).`,
          );
        }
        return [fn.name, runtime];
      }),
    );
    stops.push(async () => {
      await Promise.all([...runtimes.values()].map((runtime) => runtime.stop()));
    });
    // Every source invokes through the function's reserved concurrency, as on AWS.
    const reserved = new Map(provisioned.functions.map((fn) => [fn.name, fn.reservedConcurrency]));
    const invokers = new Map(
      [...runtimes].map(([name, runtime]) => [name, limitConcurrency(runtime, reserved.get(name))]),
    );
    Object.assign(functions, Object.fromEntries(invokers));
    for (const fn of provisioned.functions) asyncInvokeConfigs.set(fn.name, fn.asyncInvokeConfig);
    const invoke = (functionName: string, event: unknown, awsRequestId?: string) => {
      const name = runtimes.has(functionName)
        ? functionName
        : [...runtimes.values()].find((r) => r.spec.arn === functionName)?.spec.name;
      const invoker = name === undefined ? undefined : invokers.get(name);
      if (!invoker) {
        throw new UnknownFunctionError(
          `Function not found: ${functionName}. The app has ${[...runtimes.keys()].join(', ')}.`,
        );
      }
      return invoker.invoke(event, awsRequestId);
    };

    // A disabled mapping is deployed (the read API lists it) but not polled, as on AWS.
    for (const source of provisioned.eventSources.filter((candidate) => candidate.enabled)) {
      const poller = startEventSourcePoller({
        sqs,
        source,
        region: LOCAL_REGION,
        invoke: (event: SQSEvent) => invoke(source.functionName, event),
        onBatch: (report) => options.onBatch?.(source.functionName, report),
        duplicateDeliveries: options.duplicateDeliveries
          ? { receiveAgain: sqsEmulator.receiveAgain }
          : undefined,
      });
      // Pollers stop before the functions and emulators they use.
      stops.push(() => poller.stop());
    }
    for (const source of provisioned.streamSources) {
      await started(
        startStreamPoller({
          streams,
          sqs,
          source,
          region: LOCAL_REGION,
          invoke: (event: DynamoDBStreamEvent, awsRequestId) =>
            invoke(source.functionName, event, awsRequestId),
          onBatch: (report) => options.onStreamBatch?.(source.functionName, report),
        }),
        (streamPoller) => streamPoller.stop(),
      );
    }
    for (const schedule of provisioned.schedules) {
      const runner = startScheduleRunner({
        schedule,
        intervalMs: options.scheduleIntervalMs,
        region: LOCAL_REGION,
        accountId: LOCAL_ACCOUNT_ID,
        invoke,
        asyncInvokeConfigOf: asyncInvocation.configOf,
        asyncRetryDelaysMs: asyncInvocation.retryDelaysMs,
        onRun: (functionName, result, attempt) =>
          options.onScheduledRun?.(schedule.name, functionName, result, attempt),
      });
      stops.push(() => runner.stop());
    }

    deployment = describeDeployment(
      stacks.map((stack, index) => ({ stack, template: assembly.stacks[index].template })),
      { region: LOCAL_REGION, accountId: LOCAL_ACCOUNT_ID },
    );
    const pipeline = findPipeline(stacks);
    const outputs = Object.fromEntries(
      stacks.flatMap((stack) => stack.outputs.map((output) => [output.OutputKey, output.OutputValue])),
    );
    const description: SandboxDescription = {
      region: LOCAL_REGION,
      stackName: pipeline?.stackName ?? stacks[0].stackName,
      endpoints: {
        edge: edge.endpoint,
        sqs: sqsEmulator.endpoint,
        dynamodb: dynamodbLocal.endpoint,
        lambda: lambda.endpoint,
      },
      ...(pipeline && { resources: pipeline.resources }),
      outputs,
      notEmulated: provisioned.notEmulated,
    };
    return {
      description,
      provisioned,
      assemblyDirectory: assembly.directory,
      pipelineResources: () => {
        if (pipeline) return pipeline.resources;
        throw new NoPipelineError(
          `No stack of the app in ${appDirectory} has an OncelyPipeline's outputs (${PIPELINE_OUTPUTS.queueUrl}, …).`,
        );
      },
      usage: () => ({
        functions: Object.fromEntries([...runtimes].map(([name, runtime]) => [name, runtime.usage()])),
        dynamodbLocalResidentBytes: residentBytes(dynamodbLocal.pid),
        hostHeapUsedBytes: process.memoryUsage().heapUsed,
      }),
      invoke,
      stop,
    };
  } catch (error) {
    // The start-up's failure is the one to report, not a failure to stop after it.
    await stop().catch(() => undefined);
    throw error;
  }
}

/** The first stack whose outputs are an OncelyPipeline's (with whatever `outputPrefix`), and its resources. */
function findPipeline(
  stacks: ProvisionedStack[],
): { stackName: string; resources: PipelineResources } | undefined {
  const marker = PIPELINE_OUTPUTS.publisherFunctionName;
  for (const { stackName, outputs } of stacks) {
    for (const { OutputKey } of outputs.filter((output) => output.OutputKey.endsWith(marker))) {
      try {
        return {
          stackName,
          resources: resourcesFromOutputs(stackName, outputs, OutputKey.slice(0, -marker.length)),
        };
      } catch (error) {
        // Another construct's output of that name: not a pipeline.
        if (!(error instanceof MissingStackOutputsError)) throw error;
      }
    }
  }
  return undefined;
}

/**
 * Installs each Node.js major the functions' runtimes name that no Node found here has
 * (`installNode`), so that every function runs on its runtime's major.
 */
function installMissingNodes(functions: readonly { runtime: string }[], appDirectory: string): void {
  const missing = new Set<number>();
  for (const fn of functions) {
    const node = nodeBinaryFor(fn.runtime, appDirectory);
    if (!node.matches && node.wantedMajor !== undefined) missing.add(node.wantedMajor);
  }
  for (const major of missing) {
    console.log(
      `oncely local: installing Node.js ${major} into ${lambdaNodeCache(major, appDirectory)} (once)…`,
    );
    installLambdaNode(major, appDirectory);
  }
  forgetNodeBinaries();
}

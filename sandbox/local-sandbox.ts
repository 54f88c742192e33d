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
import { type AppFunctions, startAppFunctions } from './app-functions.js';
import type { AsyncAttempt, AsyncInvokeConfig } from './async-invocation.js';
import type { SandboxFigures } from './cloudwatch-api.js';
import { type Deployment, describeDeployment } from './deployment.js';
import { startDynamoDbLocal } from './dynamodb-local.js';
import { startEdgeEndpoint } from './edge-endpoint.js';
import { type BatchReport, startEventSourcePoller } from './event-source-poller.js';
import type { FunctionOutput, FunctionUsage } from './function-runtime.js';
import type { InvocationResult, LocalInvoker } from './lambda-context.js';
import { startLambdaInvokeEndpoint } from './lambda-invoke-endpoint.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION, localAwsConfig } from './local-aws-config.js';
import type { LocalQueue } from './local-resources.js';
import { residentBytes } from './process-memory.js';
import {
  type LocalEventSource,
  type LocalFunction,
  type ProvisionedStack,
  provisionTemplate,
} from './provision.js';
import { provideRuntimeModules } from './runtime-modules.js';
import type { LocalSchedule } from './schedule-rules.js';
import { startScheduleRunner } from './schedule-runner.js';
import { LocalServerlessCaches } from './serverless-cache.js';
import { type SqsEmulator, startSqsEmulator } from './sqs-emulator.js';
import { type StreamBatchReport, startStreamPoller } from './stream-poller.js';
import type { LocalStreamSource } from './stream-source.js';
import {
  type AssemblyStack,
  CdkAppConfigError,
  type CloudAssembly,
  readCloudAssembly,
  synthesizeApp,
} from './synthesize.js';
import { Teardown } from './teardown.js';
import { startTraceCollector, type TraceCollector, TraceCollectorError } from './trace-collector.js';
import { missingTracePackages } from './trace-packages.js';

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
   * A cloud assembly of the app that {@link synthesizeApp} wrote before (with the context it
   * needs): run as it is, not synthesised again, and left in place on stop, so that several
   * sandboxes of one app (a test suite's) pay for one synthesis. Not with `context`, which only a
   * synthesis applies. By default the sandbox synthesises the app, and removes the assembly on stop.
   */
  cloudAssembly?: string;
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
  /**
   * Collects the functions' spans, as the ADOT layer does on AWS (docs/local.md, "Traces"): each
   * function gets OpenTelemetry's SDK registered before its handler loads and a span per
   * invocation, and exports to the sandbox's OTLP/HTTP JSON collector, which writes every export to
   * `file` (emptied first). Needs `TRACE_PACKAGES` installed. Off by default; `oncely local` turns
   * it on.
   */
  traces?: { file: string };
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
  /**
   * The app's serverless caches (`AWS::ElastiCache::ServerlessCache`, OncelyPipeline's
   * `leaseRecords: 'valkey'`), each a local redis-server: its `host:port` (TLS only, the certificate
   * `caCertificateFile`). Absent when the app has none.
   */
  caches?: {
    stackName: string;
    logicalId: string;
    name: string;
    endpoint: string;
    caCertificateFile: string;
  }[];
  /**
   * Where the functions' spans go (`endpoint`, OTLP/HTTP JSON: your own process may export there
   * too) and where they are kept (`file`, one OTLP JSON export per line). Absent without `traces`.
   */
  traces?: { endpoint: string; file: string };
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
  /** The cloud assembly the functions run from; removed on stop unless it was given (`cloudAssembly`). */
  readonly assemblyDirectory: string;
  /** The process group leader of each serverless cache's server, by the cache's logical id. */
  readonly cachePids: ReadonlyMap<string, number>;
  /** The pipeline's resources; throws {@link NoPipelineError} when the app has no OncelyPipeline. */
  pipelineResources(): PipelineResources;
  /** What the functions and the emulators use now: `npm run soak` samples it through its run. */
  usage(): SandboxUsage;
  /** Invokes a function of the app by name or ARN, as Lambda would. */
  invoke(functionName: string, event: unknown): Promise<InvocationResult>;
  /** Stops everything it started, DynamoDB Local's JVM included, and removes the cloud assembly it synthesised. */
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
  if (options.cloudAssembly !== undefined && options.context !== undefined) {
    throw new CdkAppConfigError(
      'Give the sandbox a context or a cloudAssembly, not both: the context applies to a synthesis, and a given assembly is not synthesised again.',
    );
  }
  const teardown = new Teardown();
  try {
    const appDirectory = resolve(options.appDirectory ?? '.');
    const { assembly, emulators, sqsEmulator, dynamodbLocal } = await startAppAndEmulators(
      teardown,
      appDirectory,
      options,
    );
    provideRuntimeModules(assembly.directory, [appDirectory, ONCELY_DIRECTORY]);
    const traces = options.traces && (await startTraces(teardown, options.traces.file));
    const clients = startClients(teardown, emulators);
    const served = new ServedApp(options.asyncRetryDelaysMs);
    const { lambda, edge } = await startEndpoints(teardown, emulators, served);
    // Queue URLs name the edge, as LocalStack's name its one endpoint: a client whose only
    // configuration is AWS_ENDPOINT_URL then sends to the host of a queue's URL what it would
    // anyway (the SDK prefers that host to its endpoint when the two differ).
    sqsEmulator.nameQueuesAt(edge.port);
    const caches = new LocalServerlessCaches();
    teardown.add(() => caches.stop());
    const provisioned = await provisionApp(assembly.stacks, clients, caches);
    const environmentOf = await functionEnvironments(provisioned.queues, emulators, edge.endpoint, {
      ...options,
      tracesEndpoint: traces?.endpoint,
      caCertificateFile: caches.caCertificateFile,
    });
    const functions = startAppFunctions(provisioned.functions, {
      appDirectory,
      environmentOf,
      functionOutput: options.functionOutput,
      freeze: options.freezeFunctions,
      installNode: options.installNode,
    });
    teardown.add(() => functions.stop());
    served.serveFunctions(provisioned.functions, functions.invokers);
    served.figures = { functions: functions.metrics, oldestSentAt: () => sqsEmulator.oldestSentAt() };
    await startSources(teardown, provisioned, { clients, functions, served, sqsEmulator, options });
    served.deployment = describeDeployment(
      provisioned.stacks.map((stack, index) => ({ stack, template: assembly.stacks[index].template })),
      { region: LOCAL_REGION, accountId: LOCAL_ACCOUNT_ID },
    );
    return runningSandbox({
      appDirectory,
      assemblyDirectory: assembly.directory,
      provisioned,
      endpoints: { edge: edge.endpoint, ...emulators, lambda: lambda.endpoint },
      functions,
      dynamodbLocalPid: dynamodbLocal.pid,
      traces,
      caches,
      teardown,
    });
  } catch (error) {
    // The start-up's failure is the one to report, not a failure to stop after it.
    await teardown.stop().catch(() => undefined);
    throw error;
  }
}

/** The app synthesised, DynamoDB Local and the SQS emulator, each started with its stop added. */
async function startAppAndEmulators(teardown: Teardown, appDirectory: string, options: SandboxOptions) {
  // The synth takes longest (a bundler per function): the emulators start meanwhile.
  const starting = [
    teardown.started(assemblyOf(appDirectory, options), (assembly) => assembly.remove()),
    teardown.started(startDynamoDbLocal(), (dynamodbLocal) => dynamodbLocal.stop()),
    teardown.started(startSqsEmulator({ oneGroupPerReceive: options.oneGroupPerReceive }), (sqsEmulator) =>
      sqsEmulator.stop(),
    ),
  ] as const;
  // Every part has started or failed before any failure is thrown, so that stop() finds them all.
  await Promise.allSettled(starting);
  const [assembly, dynamodbLocal, sqsEmulator] = await Promise.all(starting);
  const emulators: ServiceEndpoints = { sqs: sqsEmulator.endpoint, dynamodb: dynamodbLocal.endpoint };
  return { assembly, emulators, sqsEmulator, dynamodbLocal };
}

/** The app's cloud assembly: the one given, or synthesised now. */
async function assemblyOf(appDirectory: string, options: SandboxOptions): Promise<CloudAssembly> {
  if (options.cloudAssembly === undefined) return synthesizeApp({ appDirectory, context: options.context });
  return readCloudAssembly(options.cloudAssembly);
}

/** The trace collector, once the packages the functions' trace layer loads are known to be installed. */
async function startTraces(teardown: Teardown, file: string): Promise<TraceCollector> {
  const missing = missingTracePackages();
  if (missing.length > 0) {
    throw new TraceCollectorError(
      `Collecting traces needs OpenTelemetry's SDK beside Oncely: npm install --save-dev ${missing.join(' ')}`,
    );
  }
  return teardown.started(startTraceCollector(file), (collector) => collector.stop());
}

/** The sandbox's own clients of the emulators: they provision the stacks and poll the sources. */
interface LocalClients {
  sqs: SQSClient;
  dynamodb: DynamoDBClient;
  streams: DynamoDBStreamsClient;
}

function startClients(teardown: Teardown, emulators: ServiceEndpoints): LocalClients {
  const clients = {
    sqs: new SQSClient(localAwsConfig(emulators.sqs)),
    dynamodb: new DynamoDBClient(localAwsConfig(emulators.dynamodb)),
    streams: new DynamoDBStreamsClient(localAwsConfig(emulators.dynamodb)),
  };
  teardown.add(() => {
    clients.sqs.destroy();
    clients.dynamodb.destroy();
    clients.streams.destroy();
  });
  return clients;
}

/**
 * What the Lambda and edge endpoints serve: filled once the stacks are provisioned, as Lambda knows
 * no function, and CloudFormation and Lambda describe nothing, before the deploy.
 */
class ServedApp {
  /** The functions the Lambda endpoint serves, by name. */
  readonly functions: Record<string, LocalInvoker> = {};
  /** How `Event` invocations are retried: each function's asynchronous-invocation config, and the waits. */
  readonly asyncInvocation: {
    configOf: (name: string) => AsyncInvokeConfig | undefined;
    retryDelaysMs?: readonly number[];
  };
  deployment: Deployment | undefined;
  /** What the edge's CloudWatch answers from, once the functions run. */
  figures: SandboxFigures | undefined;
  readonly #asyncInvokeConfigs = new Map<string, AsyncInvokeConfig | undefined>();

  constructor(retryDelaysMs: readonly number[] | undefined) {
    this.asyncInvocation = { configOf: (name) => this.#asyncInvokeConfigs.get(name), retryDelaysMs };
  }

  serveFunctions(functions: readonly LocalFunction[], invokers: ReadonlyMap<string, LocalInvoker>): void {
    Object.assign(this.functions, Object.fromEntries(invokers));
    for (const fn of functions) this.#asyncInvokeConfigs.set(fn.name, fn.asyncInvokeConfig);
  }
}

/** The Lambda Invoke endpoint, and the edge in front of it and the emulators. */
async function startEndpoints(teardown: Teardown, emulators: ServiceEndpoints, served: ServedApp) {
  const lambda = await teardown.started(
    startLambdaInvokeEndpoint({ functions: served.functions, asyncInvocation: served.asyncInvocation }),
    (endpoint) => endpoint.stop(),
  );
  const edge = await teardown.started(
    startEdgeEndpoint({
      targets: { ...emulators, lambda: lambda.endpoint },
      deployment: () => served.deployment,
      figures: () => served.figures,
    }),
    (endpoint) => endpoint.stop(),
  );
  return { lambda, edge };
}

/** Every stack of the app provisioned, in order: a stack may import what those before it export. */
async function provisionApp(
  stacks: readonly AssemblyStack[],
  clients: LocalClients,
  caches: LocalServerlessCaches,
): Promise<ProvisionedApp> {
  const provisionedStacks: ProvisionedStack[] = [];
  const exports = new Map<string, string>();
  for (const stack of stacks) {
    const provisioned = await provisionTemplate(stack.template, {
      sqs: clients.sqs,
      dynamodb: clients.dynamodb,
      stackName: stack.stackName,
      region: LOCAL_REGION,
      accountId: LOCAL_ACCOUNT_ID,
      assemblyDirectory: stack.assemblyDirectory,
      exports,
      startServerlessCache: caches.start,
    });
    for (const [name, value] of provisioned.exports) exports.set(name, value);
    provisionedStacks.push(provisioned);
  }
  return {
    stacks: provisionedStacks,
    queues: provisionedStacks.flatMap((stack) => stack.queues),
    tables: provisionedStacks.flatMap((stack) => stack.tables),
    functions: provisionedStacks.flatMap((stack) => stack.functions),
    eventSources: provisionedStacks.flatMap((stack) => stack.eventSources),
    streamSources: provisionedStacks.flatMap((stack) => stack.streamSources),
    schedules: provisionedStacks.flatMap((stack) => stack.schedules),
    notEmulated: provisionedStacks.flatMap((stack) => stack.notEmulated),
  };
}

/**
 * A function's environment here: the template's, with local AWS settings (SQS and DynamoDB where
 * `routeFunctions` sends them) and the options' variables over it.
 */
async function functionEnvironments(
  queues: readonly LocalQueue[],
  emulators: ServiceEndpoints,
  edgeEndpoint: string,
  options: SandboxOptions & { tracesEndpoint?: string; caCertificateFile?: string },
): Promise<(fn: LocalFunction) => Record<string, string>> {
  const routed = options.routeFunctions ? await options.routeFunctions(emulators) : emulators;
  const awsEnvironment = {
    AWS_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    // Any other service the functions call answers at the edge (Lambda), or says it is not emulated.
    AWS_ENDPOINT_URL: edgeEndpoint,
    AWS_ENDPOINT_URL_SQS: routed.sqs,
    AWS_ENDPOINT_URL_DYNAMODB: routed.dynamodb,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    // The switch of function-worker.mjs's trace layer: where the functions export their spans.
    ...(options.tracesEndpoint ? { ONCELY_LOCAL_TRACES: options.tracesEndpoint } : {}),
    // The local serverless caches' self-signed certificate, trusted as ElastiCache's CA is on AWS:
    // the consumer's TLS connection checks it as it checks the deployed cache's.
    ...(options.caCertificateFile ? { NODE_EXTRA_CA_CERTS: options.caCertificateFile } : {}),
  };
  // A function's queue URLs name the SQS endpoint it is given, as on AWS: the SDK would send to
  // the URL's host instead (with a warning on every request), past a routed proxy.
  const queueUrlForFunctions = new Map(
    queues.map((queue) => [queue.url, new URL(new URL(queue.url).pathname, routed.sqs).href]),
  );
  return (fn) => {
    const variables = Object.entries(fn.environment).map(([name, value]) => [
      name,
      queueUrlForFunctions.get(value) ?? value,
    ]);
    return { ...Object.fromEntries(variables), ...awsEnvironment, ...options.environment };
  };
}

/** What the event sources and schedules run with. */
interface SourceParts {
  clients: LocalClients;
  functions: AppFunctions;
  served: ServedApp;
  sqsEmulator: SqsEmulator;
  options: SandboxOptions;
}

/** The app's event sources polled and its schedules run, each invoking its function. */
async function startSources(
  teardown: Teardown,
  provisioned: ProvisionedApp,
  parts: SourceParts,
): Promise<void> {
  startQueuePollers(teardown, provisioned.eventSources, parts);
  await startStreamPollers(teardown, provisioned.streamSources, parts);
  startScheduleRunners(teardown, provisioned.schedules, parts);
}

function startQueuePollers(
  teardown: Teardown,
  sources: readonly LocalEventSource[],
  { clients, functions, sqsEmulator, options }: SourceParts,
): void {
  // A disabled mapping is deployed (the read API lists it) but not polled, as on AWS.
  for (const source of sources.filter((candidate) => candidate.enabled)) {
    const poller = startEventSourcePoller({
      sqs: clients.sqs,
      source,
      region: LOCAL_REGION,
      invoke: (event: SQSEvent) => functions.invoke(source.functionName, event),
      onBatch: (report) => options.onBatch?.(source.functionName, report),
      duplicateDeliveries: options.duplicateDeliveries
        ? { receiveAgain: sqsEmulator.receiveAgain }
        : undefined,
    });
    // Pollers stop before the functions and emulators they use.
    teardown.add(() => poller.stop());
  }
}

async function startStreamPollers(
  teardown: Teardown,
  sources: readonly LocalStreamSource[],
  { clients, functions, options }: SourceParts,
): Promise<void> {
  for (const source of sources) {
    await teardown.started(
      startStreamPoller({
        streams: clients.streams,
        sqs: clients.sqs,
        source,
        region: LOCAL_REGION,
        invoke: (event: DynamoDBStreamEvent, awsRequestId) =>
          functions.invoke(source.functionName, event, awsRequestId),
        onBatch: (report) => options.onStreamBatch?.(source.functionName, report),
      }),
      (streamPoller) => streamPoller.stop(),
    );
  }
}

function startScheduleRunners(
  teardown: Teardown,
  schedules: readonly LocalSchedule[],
  { functions, served, options }: SourceParts,
): void {
  for (const schedule of schedules) {
    const runner = startScheduleRunner({
      schedule,
      intervalMs: options.scheduleIntervalMs,
      region: LOCAL_REGION,
      accountId: LOCAL_ACCOUNT_ID,
      invoke: functions.invoke,
      asyncInvokeConfigOf: served.asyncInvocation.configOf,
      asyncRetryDelaysMs: served.asyncInvocation.retryDelaysMs,
      onRun: (functionName, result, attempt) =>
        options.onScheduledRun?.(schedule.name, functionName, result, attempt),
    });
    teardown.add(() => runner.stop());
  }
}

/** The ready file's content: the endpoints, the pipeline's stack and resources, every output. */
function describeSandbox(
  provisioned: ProvisionedApp,
  pipeline: ReturnType<typeof findPipeline>,
  endpoints: SandboxDescription['endpoints'],
  traces: TraceCollector | undefined,
  caches: LocalServerlessCaches,
): SandboxDescription {
  const caCertificateFile = caches.caCertificateFile;
  const { stacks } = provisioned;
  const outputs = Object.fromEntries(
    stacks.flatMap((stack) => stack.outputs.map((output) => [output.OutputKey, output.OutputValue])),
  );
  return {
    region: LOCAL_REGION,
    stackName: pipeline?.stackName ?? stacks[0].stackName,
    endpoints,
    ...(pipeline && { resources: pipeline.resources }),
    outputs,
    notEmulated: provisioned.notEmulated,
    ...(caCertificateFile && {
      caches: caches.started.map(({ stackName, logicalId, name, address, port }) => ({
        stackName,
        logicalId,
        name,
        endpoint: `${address}:${port}`,
        caCertificateFile,
      })),
    }),
    ...(traces && { traces: { endpoint: traces.endpoint, file: traces.file } }),
  };
}

/** What a started sandbox is made of. */
interface SandboxParts {
  appDirectory: string;
  assemblyDirectory: string;
  provisioned: ProvisionedApp;
  endpoints: SandboxDescription['endpoints'];
  functions: AppFunctions;
  dynamodbLocalPid: number;
  traces: TraceCollector | undefined;
  caches: LocalServerlessCaches;
  teardown: Teardown;
}

function runningSandbox(parts: SandboxParts): Sandbox {
  const { appDirectory, provisioned, functions, teardown } = parts;
  const pipeline = findPipeline(provisioned.stacks);
  return {
    description: describeSandbox(provisioned, pipeline, parts.endpoints, parts.traces, parts.caches),
    provisioned,
    assemblyDirectory: parts.assemblyDirectory,
    cachePids: new Map(parts.caches.started.map(({ logicalId, pid }) => [logicalId, pid])),
    pipelineResources: () => {
      if (pipeline) return pipeline.resources;
      throw new NoPipelineError(
        `No stack of the app in ${appDirectory} has an OncelyPipeline's outputs (${PIPELINE_OUTPUTS.queueUrl}, …).`,
      );
    },
    usage: () => ({
      functions: functions.usage(),
      dynamodbLocalResidentBytes: residentBytes(parts.dynamodbLocalPid),
      hostHeapUsedBytes: process.memoryUsage().heapUsed,
    }),
    invoke: functions.invoke,
    stop: () => teardown.stop(),
  };
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

import { existsSync, statSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import {
  type AttributeDefinition,
  CreateTableCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { AsyncInvokeConfig } from './async-invocation.js';
import {
  type CloudFormationTemplate,
  type ResolveContext,
  type ResourceAttributes,
  resolveValue,
  type TemplateResource,
  UnresolvableValueError,
} from './cloudformation.js';
import { describeEventInvokeConfigs } from './event-invoke-configs.js';
import type { LocalQueue, LocalTable } from './local-resources.js';
import { describeQueueSource, type LocalEventSource } from './queue-source.js';
import { describeScheduleRules, type LocalSchedule } from './schedule-rules.js';
import type { ServerlessCacheSpec, StartServerlessCache } from './serverless-cache.js';
import { describeStreamSource, type LocalStreamSource } from './stream-source.js';

/** A Lambda function of the template, to be run in-process from its asset: the code `cdk deploy` uploads. */
export interface LocalFunction {
  logicalId: string;
  name: string;
  arn: string;
  /** The function's bundled asset in the cloud assembly: what Lambda unpacks into its task root. */
  codeDirectory: string;
  /** The template's `Handler`, e.g. `index.handler`. */
  handler: string;
  /** The template's `Runtime`, e.g. `nodejs24.x`; the worker runs it on this machine's Node.js. */
  runtime: string;
  /** The template's `Architectures` (Lambda's default `x86_64`): reported, not emulated. */
  architectures: string[];
  /** The execution role's ARN as the deployed function would name it; IAM is not emulated. */
  role?: string;
  timeoutSeconds: number;
  memoryMiB: number;
  /** `ReservedConcurrentExecutions`: its invocations at once, from every source; unbounded without. */
  reservedConcurrency?: number;
  /**
   * For a function on a capacity provider (`CapacityProviderConfig`, Lambda Managed Instances), its
   * `PerExecutionEnvironmentMaxConcurrency`, or Node.js's default of 64 (a vCPU's): the invocations
   * one container runs at once (function-runtime.ts). Absent for Lambda's default compute.
   */
  perExecutionEnvironmentMaxConcurrency?: number;
  environment: Record<string, string>;
  /** Its `AWS::Lambda::EventInvokeConfig`'s retries and maximum age; Lambda's defaults when absent. */
  asyncInvokeConfig?: AsyncInvokeConfig;
}

export type { LocalEventSource } from './queue-source.js';

/**
 * A resource of the template with no local effect — or an output without a local value (type
 * `Output`); `note` says why when it is not the type alone.
 */
export interface NotEmulatedResource {
  stackName: string;
  logicalId: string;
  type: string;
  note?: string;
}

export interface ProvisionedStack {
  stackName: string;
  queues: LocalQueue[];
  tables: LocalTable[];
  functions: LocalFunction[];
  eventSources: LocalEventSource[];
  /** DynamoDB-stream event source mappings, to be run by local stream pollers. */
  streamSources: LocalStreamSource[];
  /** EventBridge schedule rules, to be run by local schedule runners. */
  schedules: LocalSchedule[];
  /** Resources with no local effect (IAM, logs, alarms, policies…), listed so nothing is skipped silently. */
  notEmulated: NotEmulatedResource[];
  /** The template's outputs, resolved to the local resources: what `cdk deploy` would output. */
  outputs: { OutputKey: string; OutputValue: string; ExportName?: string }[];
  /** The outputs it exports, by export name, for the stacks that import them. */
  exports: Map<string, string>;
  /** Each created resource's physical id (what `Ref` gives: a queue's URL, a table's name…), by logical id. */
  physicalIds: Map<string, string>;
}

export interface ProvisionOptions {
  sqs: SQSClient;
  dynamodb: DynamoDBClient;
  stackName: string;
  region: string;
  accountId: string;
  /** The directory the template's asset paths are relative to. */
  assemblyDirectory: string;
  /** What the stacks provisioned before this one export (`Fn::ImportValue`). */
  exports?: ReadonlyMap<string, string>;
  /**
   * Starts a local server for each `AWS::ElastiCache::ServerlessCache` (serverless-cache.ts), whose
   * attributes then resolve to it. Without it, a cache is not emulated.
   */
  startServerlessCache?: StartServerlessCache;
}

const EMULATED = new Set([
  'AWS::SQS::Queue',
  'AWS::DynamoDB::Table',
  'AWS::Lambda::Function',
  'AWS::Lambda::EventSourceMapping',
  'AWS::ElastiCache::ServerlessCache',
]);

/**
 * Creates the template's queues and tables in the emulators with their real properties, and
 * describes its functions, event sources and schedules for the local runtime. Local and deployed
 * topology come from the same template, so they cannot drift.
 */
export async function provisionTemplate(
  template: CloudFormationTemplate,
  options: ProvisionOptions,
): Promise<ProvisionedStack> {
  const stack = startProvisioning(template, options);
  const queues = await createQueues(stack);
  const tables = await createTables(stack);
  await startCaches(stack);
  const functions = describeFunctions(stack);
  const invokeConfigs = applyEventInvokeConfigs(stack, functions);
  nameLogGroups(stack);
  const { eventSources, streamSources } = describeMappings(stack, { queues, tables, functions });
  const scheduleRules = describeSchedules(stack, functions);
  const notEmulated = notEmulatedResources(
    stack,
    new Set([...scheduleRules.handled, ...invokeConfigs.handled]),
  );
  const { outputs, exports } = resolveOutputs(stack, notEmulated);
  const physicalIds = new Map([...stack.resources].map(([logicalId, { ref }]) => [logicalId, ref]));
  return {
    physicalIds,
    stackName: options.stackName,
    queues,
    tables,
    functions,
    eventSources,
    streamSources,
    schedules: scheduleRules.schedules,
    notEmulated,
    outputs,
    exports,
  };
}

/** What the steps of a template's provisioning share. */
interface Provisioning {
  template: CloudFormationTemplate;
  options: ProvisionOptions;
  /** Each resource provisioned so far, by logical id: what `Ref` and `Fn::GetAtt` of it resolve to. */
  resources: Map<string, ResourceAttributes>;
  /** Resources of an emulated type that still cannot run locally, with the reason. */
  notRun: Map<string, string>;
  /** A template value, resolved against the resources provisioned so far. */
  resolve<T>(value: unknown): T;
  /** The template's resources of one type. */
  ofType(type: string): [string, TemplateResource][];
}

function startProvisioning(template: CloudFormationTemplate, options: ProvisionOptions): Provisioning {
  const resources = new Map<string, ResourceAttributes>();
  const context: ResolveContext = { ...options, resources, exports: options.exports ?? new Map() };
  return {
    template,
    options,
    resources,
    notRun: new Map(),
    resolve: <T>(value: unknown) => resolveValue(value, context) as T,
    ofType: (type) => Object.entries(template.Resources).filter(([, resource]) => resource.Type === type),
  };
}

async function createQueues(stack: Provisioning): Promise<LocalQueue[]> {
  const queues: LocalQueue[] = [];
  for (const [logicalId, resource] of dependencyOrder(stack.ofType('AWS::SQS::Queue'))) {
    const queue = await createQueue(logicalId, resource, stack.options, stack.resolve);
    stack.resources.set(logicalId, {
      ref: queue.url,
      attributes: { Arn: queue.arn, QueueName: queue.name, QueueUrl: queue.url },
    });
    queues.push(queue);
  }
  return queues;
}

async function createTables(stack: Provisioning): Promise<LocalTable[]> {
  const tables: LocalTable[] = [];
  for (const [logicalId, resource] of stack.ofType('AWS::DynamoDB::Table')) {
    const table = await createTable(logicalId, resource, stack.options);
    const attributes: Record<string, string> = { Arn: table.arn };
    if (table.streamArn !== undefined) attributes.StreamArn = table.streamArn;
    stack.resources.set(logicalId, { ref: table.name, attributes });
    tables.push(table);
  }
  return tables;
}

/**
 * Each serverless cache started on a local server (its users and user group named as deployed, but
 * not emulated), its endpoint and reader endpoint the server's. Without a starter, a cache is listed
 * as not emulated.
 */
async function startCaches(stack: Provisioning): Promise<void> {
  const { options, resources, notRun, resolve, ofType } = stack;
  const caches = ofType('AWS::ElastiCache::ServerlessCache');
  if (caches.length === 0) return;
  const users = new Map<string, { userName: string; accessString: string }>();
  for (const [logicalId, resource] of ofType('AWS::ElastiCache::User')) {
    const properties = resource.Properties ?? {};
    const userId = resolve<string>(properties.UserId);
    resources.set(logicalId, { ref: userId, attributes: {} });
    users.set(userId, {
      userName: resolve<string>(properties.UserName ?? properties.UserId),
      accessString: resolve<string>(properties.AccessString ?? ''),
    });
  }
  const groups = new Map<string, string[]>();
  for (const [logicalId, resource] of ofType('AWS::ElastiCache::UserGroup')) {
    const groupId = resolve<string>(resource.Properties?.UserGroupId);
    resources.set(logicalId, { ref: groupId, attributes: {} });
    groups.set(groupId, resolve<string[]>(resource.Properties?.UserIds ?? []));
  }
  for (const [logicalId, resource] of caches) {
    if (!options.startServerlessCache) {
      notRun.set(logicalId, 'the sandbox was given no way to start a local server for it');
      continue;
    }
    const properties = resource.Properties ?? {};
    const name =
      properties.ServerlessCacheName === undefined
        ? physicalName(options.stackName, logicalId, 40).toLowerCase()
        : resolve<string>(properties.ServerlessCacheName);
    const groupId =
      properties.UserGroupId === undefined ? undefined : resolve<string>(properties.UserGroupId);
    const spec: ServerlessCacheSpec = {
      stackName: options.stackName,
      logicalId,
      name,
      users: (groups.get(groupId ?? '') ?? []).flatMap((userId) => users.get(userId) ?? []),
    };
    const { address, port } = await options.startServerlessCache(spec);
    const endpoint = { Address: address, Port: String(port) };
    resources.set(logicalId, {
      ref: spec.name,
      attributes: {
        ARN: `arn:aws:elasticache:${options.region}:${options.accountId}:serverlesscache:${spec.name}`,
        'Endpoint.Address': endpoint.Address,
        'Endpoint.Port': endpoint.Port,
        'ReaderEndpoint.Address': endpoint.Address,
        'ReaderEndpoint.Port': endpoint.Port,
      },
    });
  }
}

/** The functions that run locally, named as deployed; the others go to `notRun` with the reason. */
function describeFunctions({
  template,
  options,
  resources,
  notRun,
  resolve,
  ofType,
}: Provisioning): LocalFunction[] {
  const functions: LocalFunction[] = [];
  for (const [logicalId, resource] of ofType('AWS::Lambda::Function')) {
    const properties = resource.Properties ?? {};
    const name = String(properties.FunctionName ?? physicalName(options.stackName, logicalId, 64));
    const arn = `arn:aws:lambda:${options.region}:${options.accountId}:function:${name}`;
    resources.set(logicalId, { ref: name, attributes: { Arn: arn } });
    const code = describeFunction(resource, options.assemblyDirectory);
    if ('note' in code) notRun.set(logicalId, code.note);
    else functions.push({ logicalId, name, arn, ...code, ...roleOf(resource, options) });
  }
  // Environment variables may refer to any resource, functions included: resolve them last.
  for (const fn of functions) {
    const variables = (template.Resources[fn.logicalId].Properties?.Environment as { Variables?: unknown })
      ?.Variables;
    try {
      fn.environment = resolve<Record<string, string>>(variables ?? {});
    } catch (error) {
      if (!(error instanceof UnresolvableValueError)) throw error;
      throw new UnresolvableValueError(`The environment of function ${fn.logicalId}: ${error.message}`);
    }
  }
  return functions;
}

/** Gives each function its `AWS::Lambda::EventInvokeConfig`; the configs it handles get a physical id. */
function applyEventInvokeConfigs(stack: Provisioning, functions: LocalFunction[]): { handled: Set<string> } {
  const invokeConfigs = describeEventInvokeConfigs({
    configs: stack.ofType('AWS::Lambda::EventInvokeConfig'),
    functions,
    resolve: stack.resolve,
  });
  for (const fn of functions) {
    const config = invokeConfigs.byFunction.get(fn.name);
    if (config) fn.asyncInvokeConfig = config;
  }
  for (const [logicalId, note] of invokeConfigs.notRun) stack.notRun.set(logicalId, note);
  for (const logicalId of invokeConfigs.handled) {
    stack.resources.set(logicalId, {
      ref: physicalName(stack.options.stackName, logicalId, 64),
      attributes: {},
    });
  }
  return invokeConfigs;
}

/**
 * Not emulated (functions log to the sandbox's output), but named as deployed: the pipeline's
 * outputs name each function's log group for the runbook.
 */
function nameLogGroups({ options, resources, ofType }: Provisioning): void {
  for (const [logicalId, resource] of ofType('AWS::Logs::LogGroup')) {
    const name = String(resource.Properties?.LogGroupName ?? physicalName(options.stackName, logicalId, 512));
    resources.set(logicalId, { ref: name, attributes: {} });
  }
}

/** The event source mappings that run locally, of queues and of table streams. */
function describeMappings(
  { template, options, notRun, resolve, ofType }: Provisioning,
  targets: Pick<MappingContext, 'queues' | 'tables' | 'functions'>,
): { eventSources: LocalEventSource[]; streamSources: LocalStreamSource[] } {
  const eventSources: LocalEventSource[] = [];
  const streamSources: LocalStreamSource[] = [];
  for (const [logicalId, resource] of ofType('AWS::Lambda::EventSourceMapping')) {
    const source = describeMapping(logicalId, resource, {
      ...targets,
      resolve,
      template,
      stackName: options.stackName,
    });
    if ('note' in source) notRun.set(logicalId, source.note);
    else if ('queue' in source) eventSources.push(source);
    else streamSources.push(source);
  }
  return { eventSources, streamSources };
}

/** The rules, named as deployed, and the schedules among them that run locally. */
function describeSchedules(
  { options, resources, notRun, resolve, ofType }: Provisioning,
  functions: LocalFunction[],
): { schedules: LocalSchedule[]; handled: Set<string> } {
  const rules = ofType('AWS::Events::Rule');
  for (const [logicalId, resource] of rules) {
    const name = String(resource.Properties?.Name ?? physicalName(options.stackName, logicalId, 64));
    const arn = `arn:aws:events:${options.region}:${options.accountId}:rule/${name}`;
    resources.set(logicalId, { ref: name, attributes: { Arn: arn } });
  }
  const scheduleRules = describeScheduleRules({
    rules,
    permissions: ofType('AWS::Lambda::Permission'),
    functions,
    resolve,
  });
  for (const [logicalId, note] of scheduleRules.notRun) notRun.set(logicalId, note);
  // A permission a schedule runs by is in effect here too: it has a physical id, as deployed.
  for (const logicalId of scheduleRules.handled) {
    if (!resources.has(logicalId)) {
      resources.set(logicalId, { ref: physicalName(options.stackName, logicalId, 64), attributes: {} });
    }
  }
  return scheduleRules;
}

/**
 * The resources with no local effect: those of a type it does not emulate (but for the ones a step
 * `handled`), and those of an emulated type that cannot run.
 */
function notEmulatedResources(
  { template, options, notRun }: Provisioning,
  handled: ReadonlySet<string>,
): NotEmulatedResource[] {
  const { stackName } = options;
  return Object.entries(template.Resources)
    .filter(
      ([logicalId, resource]) =>
        notRun.has(logicalId) || (!EMULATED.has(resource.Type) && !handled.has(logicalId)),
    )
    .map(([logicalId, resource]): NotEmulatedResource => {
      const note = notRun.get(logicalId);
      const entry = { stackName, logicalId, type: resource.Type };
      return note ? { ...entry, note } : entry;
    });
}

/** The template's outputs with their local values, and its exports; an output without one goes to `notEmulated`. */
function resolveOutputs(
  { template, options, resolve }: Provisioning,
  notEmulated: NotEmulatedResource[],
): Pick<ProvisionedStack, 'outputs' | 'exports'> {
  const outputs: ProvisionedStack['outputs'] = [];
  const exports = new Map<string, string>();
  for (const [key, output] of Object.entries(template.Outputs ?? {})) {
    let value: string;
    try {
      value = String(resolve<unknown>(output.Value));
    } catch (error) {
      // An output of a resource it does not emulate (an API's URL, a bucket's name) has no local value.
      if (!(error instanceof UnresolvableValueError)) throw error;
      notEmulated.push({ stackName: options.stackName, logicalId: key, type: 'Output', note: error.message });
      continue;
    }
    const exportName = output.Export ? String(resolve<unknown>(output.Export.Name)) : undefined;
    outputs.push({ OutputKey: key, OutputValue: value, ...(exportName && { ExportName: exportName }) });
    if (exportName) exports.set(exportName, value);
  }
  return { outputs, exports };
}

/** CloudFormation's own naming, shortened: stack name and logical id, within the service's limit. */
function physicalName(stackName: string, logicalId: string, limit: number, suffix = ''): string {
  return `${stackName}-${logicalId}`.slice(0, limit - suffix.length) + suffix;
}

/** Queues that a redrive policy points at are created before the queues that point at them. */
function dependencyOrder(entries: [string, TemplateResource][]): [string, TemplateResource][] {
  const redriveTarget = (resource: TemplateResource) =>
    (resource.Properties?.RedrivePolicy as { deadLetterTargetArn?: { 'Fn::GetAtt'?: [string, string] } })
      ?.deadLetterTargetArn?.['Fn::GetAtt']?.[0];
  const ordered: [string, TemplateResource][] = [];
  const visit = (entry: [string, TemplateResource], path: string[]) => {
    if (ordered.includes(entry) || path.includes(entry[0])) return;
    const target = entries.find(([id]) => id === redriveTarget(entry[1]));
    if (target) visit(target, [...path, entry[0]]);
    ordered.push(entry);
  };
  for (const entry of entries) visit(entry, []);
  return ordered;
}

const QUEUE_ATTRIBUTES = [
  'ContentBasedDeduplication',
  'DeduplicationScope',
  'DelaySeconds',
  'FifoQueue',
  'FifoThroughputLimit',
  'MaximumMessageSize',
  'MessageRetentionPeriod',
  'ReceiveMessageWaitTimeSeconds',
  'SqsManagedSseEnabled',
  'VisibilityTimeout',
  'RedrivePolicy',
] as const;

async function createQueue(
  logicalId: string,
  resource: TemplateResource,
  options: ProvisionOptions,
  resolve: <T>(value: unknown) => T,
): Promise<LocalQueue> {
  const properties = resource.Properties ?? {};
  const fifo = properties.FifoQueue === true || properties.FifoQueue === 'true';
  const name = String(
    properties.QueueName ?? physicalName(options.stackName, logicalId, 80, fifo ? '.fifo' : ''),
  );
  const attributes: Record<string, string> = {};
  for (const key of QUEUE_ATTRIBUTES) {
    if (properties[key] === undefined) continue;
    const value = resolve<unknown>(properties[key]);
    attributes[key] = typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
  const { QueueUrl } = await options.sqs.send(
    new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
  );
  if (!QueueUrl) throw new Error(`the SQS emulator returned no URL for ${name}`);
  const { Attributes } = await options.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  return { logicalId, name, url: QueueUrl, arn: String(Attributes?.QueueArn) };
}

async function createTable(
  logicalId: string,
  resource: TemplateResource,
  options: ProvisionOptions,
): Promise<LocalTable> {
  const properties = resource.Properties ?? {};
  const name = String(properties.TableName ?? physicalName(options.stackName, logicalId, 255));
  const input: CreateTableCommandInput = {
    TableName: name,
    KeySchema: properties.KeySchema as CreateTableCommandInput['KeySchema'],
    AttributeDefinitions: properties.AttributeDefinitions as AttributeDefinition[],
    BillingMode: (properties.BillingMode as CreateTableCommandInput['BillingMode']) ?? 'PROVISIONED',
    ProvisionedThroughput:
      properties.ProvisionedThroughput as CreateTableCommandInput['ProvisionedThroughput'],
    GlobalSecondaryIndexes:
      properties.GlobalSecondaryIndexes as CreateTableCommandInput['GlobalSecondaryIndexes'],
    LocalSecondaryIndexes:
      properties.LocalSecondaryIndexes as CreateTableCommandInput['LocalSecondaryIndexes'],
    StreamSpecification: properties.StreamSpecification
      ? { StreamEnabled: true, ...(properties.StreamSpecification as object) }
      : undefined,
  };
  // The table's TimeToLiveSpecification is left off on purpose: DynamoDB Local deletes expired items
  // within seconds, where AWS deletes them "typically within two days" and they "still show up in
  // reads, queries, and scans" until then
  // (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html).
  // Never deleted, they show locally whether reads filter on the TTL attribute, as they must on AWS.
  const { TableDescription } = await options.dynamodb.send(new CreateTableCommand(input));
  const streamArn = TableDescription?.LatestStreamArn;
  return { logicalId, name, arn: String(TableDescription?.TableArn), ...(streamArn && { streamArn }) };
}

/** The asset metadata `cdk synth` writes (with `aws:cdk:enable-asset-metadata`) on a resource with a local asset. */
const ASSET_PATH_METADATA = 'aws:asset:path';
const ASSET_PROPERTY_METADATA = 'aws:asset:property';

/**
 * Where a function's code is in the cloud assembly — the bundled asset `cdk deploy` uploads — or why
 * the sandbox cannot run it.
 */
function describeFunction(
  resource: TemplateResource,
  assemblyDirectory: string,
): Omit<LocalFunction, 'logicalId' | 'name' | 'arn'> | { note: string } {
  const properties = resource.Properties ?? {};
  const runtime = properties.Runtime;
  if (typeof runtime !== 'string' || !runtime.startsWith('nodejs')) {
    const what = typeof runtime === 'string' ? `runtime ${runtime}` : 'a container image';
    return { note: `${what}: only Node.js functions run locally` };
  }
  const assetPath = resource.Metadata?.[ASSET_PATH_METADATA];
  if (typeof assetPath !== 'string' || resource.Metadata?.[ASSET_PROPERTY_METADATA] !== 'Code') {
    return { note: 'its code is not an asset of the cloud assembly (inline or from S3)' };
  }
  const codeDirectory = resolvePath(assemblyDirectory, assetPath);
  if (!existsSync(codeDirectory) || !statSync(codeDirectory).isDirectory()) {
    return { note: `its asset ${assetPath} is not a directory of the cloud assembly` };
  }
  return {
    codeDirectory,
    handler: String(properties.Handler ?? 'index.handler'),
    runtime,
    architectures: (properties.Architectures as string[] | undefined) ?? ['x86_64'],
    timeoutSeconds: Number(properties.Timeout ?? 3),
    memoryMiB: Number(properties.MemorySize ?? 128),
    ...(properties.ReservedConcurrentExecutions !== undefined && {
      reservedConcurrency: Number(properties.ReservedConcurrentExecutions),
    }),
    ...managedInstancesOf(properties),
    environment: {},
  };
}

/** Node.js's `PerExecutionEnvironmentMaxConcurrency` when the function sets none: 64 a vCPU. */
const NODEJS_DEFAULT_PER_ENVIRONMENT = 64;

/** How a function placed on a capacity provider runs its invocations (Lambda Managed Instances); nothing otherwise. */
function managedInstancesOf(properties: Record<string, unknown>): {
  perExecutionEnvironmentMaxConcurrency?: number;
} {
  const config = (properties.CapacityProviderConfig as Record<string, unknown> | undefined)
    ?.LambdaManagedInstancesCapacityProviderConfig as Record<string, unknown> | undefined;
  if (!config) return {};
  const perEnvironment = config.PerExecutionEnvironmentMaxConcurrency;
  return {
    perExecutionEnvironmentMaxConcurrency:
      perEnvironment === undefined ? NODEJS_DEFAULT_PER_ENVIRONMENT : Number(perEnvironment),
  };
}

/**
 * The role a function names: an ARN as given, or the one its stack's role (`Fn::GetAtt [Role, Arn]`)
 * would have, named as the sandbox names what it creates.
 */
function roleOf(resource: TemplateResource, options: ProvisionOptions): { role?: string } {
  const role = resource.Properties?.Role as string | { 'Fn::GetAtt'?: [string, string] } | undefined;
  if (typeof role === 'string') return { role };
  const logicalId = role?.['Fn::GetAtt']?.[0];
  if (!logicalId) return {};
  return { role: `arn:aws:iam::${options.accountId}:role/${physicalName(options.stackName, logicalId, 64)}` };
}

/** The mappings' possible sources and targets. */
interface MappingContext {
  queues: LocalQueue[];
  tables: LocalTable[];
  functions: LocalFunction[];
  resolve: <T>(value: unknown) => T;
  template: CloudFormationTemplate;
  stackName: string;
}

/** An event source mapping of an SQS queue or a table's stream of the stack, or why it does not run. */
function describeMapping(
  logicalId: string,
  resource: TemplateResource,
  { queues, tables, functions, resolve, template, stackName }: MappingContext,
): LocalEventSource | LocalStreamSource | { note: string } {
  const properties = resource.Properties ?? {};
  let sourceArn: string;
  try {
    sourceArn = resolve<string>(properties.EventSourceArn);
  } catch (error) {
    if (!(error instanceof UnresolvableValueError)) throw error;
    return { note: `its source: ${error.message}` };
  }
  const source =
    queues.find((queue) => queue.arn === sourceArn) ??
    tables.find((table): table is LocalTable & { streamArn: string } => table.streamArn === sourceArn);
  if (!source) {
    return {
      note: `it reads ${sourceArn}; only SQS queues and DynamoDB table streams of the stack are polled locally`,
    };
  }
  const functionName = resolve<string>(properties.FunctionName);
  const fn = functions.find((candidate) => candidate.name === functionName || candidate.arn === functionName);
  if (!fn) return { note: `its function ${functionName} does not run locally` };
  return 'url' in source
    ? describeQueueSource({
        stackName,
        logicalId,
        resource,
        queue: source,
        queueResource: template.Resources[source.logicalId],
        fn,
        resolve,
      })
    : describeStreamSource({ logicalId, resource, table: source, fn, queues, resolve });
}

import type { DeployedFunction, DeployedMapping, Deployment } from './deployment.js';

/** An answer of Lambda's REST API: a JSON body, its HTTP status, and the error type if it is one. */
export interface RestAnswer {
  status: number;
  body: unknown;
  errorType?: string;
}

const FUNCTIONS = /^\/2015-03-31\/functions\/?$/;
const FUNCTION = /^\/2015-03-31\/functions\/([^/]+)\/?$/;
const CONFIGURATION = /^\/2015-03-31\/functions\/([^/]+)\/configuration\/?$/;
const MAPPINGS = /^\/2015-03-31\/event-source-mappings\/?$/;
const MAPPING = /^\/2015-03-31\/event-source-mappings\/([^/]+)\/?$/;
const INVOCATIONS = /^\/2015-03-31\/functions\/[^/]+\/invocations$/;

/** Lambda's control-plane paths: what is not an invocation under its API's version. */
export function isLambdaControlPath(path: string): boolean {
  return /^\/2015-03-31\/(functions|event-source-mappings)(\/|$)/.test(path) && !INVOCATIONS.test(path);
}

/**
 * Answers a request of Lambda's control plane from what the sandbox deployed: `ListFunctions`,
 * `GetFunction`, `GetFunctionConfiguration`, `ListEventSourceMappings` and `GetEventSourceMapping`
 * as Lambda answers them. Every other operation (a create, an update, a delete) is refused with an
 * error that says why, never a silent success.
 */
export function answerLambda(method: string, url: URL, deployment: Deployment): RestAnswer {
  const path = url.pathname;
  if (method !== 'GET') {
    return failure(
      400,
      'NotEmulated',
      `${method} ${path} is not emulated: the Oncely sandbox deploys the functions and event sources of your ` +
        'CDK app when it starts. Change the app and restart `oncely local` instead.',
    );
  }
  if (FUNCTIONS.test(path)) {
    return {
      status: 200,
      body: { Functions: deployment.functions.map((fn) => configuration(fn, deployment)) },
    };
  }
  const configurationOf = CONFIGURATION.exec(path) ?? FUNCTION.exec(path);
  if (configurationOf) {
    const fn = functionNamed(deployment, decodeURIComponent(configurationOf[1] ?? ''));
    if (!fn) return notFound(`Function not found: ${functionArn(deployment, configurationOf[1] ?? '')}`);
    const config = configuration(fn, deployment);
    if (CONFIGURATION.test(path)) return { status: 200, body: config };
    // The code is the bundle in the cloud assembly: there is no package to download.
    return { status: 200, body: { Configuration: config, Code: { RepositoryType: 'S3' } } };
  }
  if (MAPPINGS.test(path)) {
    const functionName = url.searchParams.get('FunctionName');
    const source = url.searchParams.get('EventSourceArn');
    const fn = functionName ? functionNamed(deployment, functionName) : undefined;
    if (functionName && !fn) return notFound(`Function not found: ${functionArn(deployment, functionName)}`);
    const mappings = deployment.mappings.filter(
      (mapping) => (!fn || mapping.functionArn === fn.arn) && (!source || mapping.eventSourceArn === source),
    );
    return {
      status: 200,
      body: { EventSourceMappings: mappings.map((m) => eventSourceMapping(m, deployment)) },
    };
  }
  const mappingOf = MAPPING.exec(path);
  if (mappingOf) {
    const mapping = deployment.mappings.find((candidate) => candidate.uuid === mappingOf[1]);
    if (!mapping)
      return notFound(`The resource you requested does not exist. (Service: Lambda, UUID ${mappingOf[1]})`);
    return { status: 200, body: eventSourceMapping(mapping, deployment) };
  }
  return failure(
    400,
    'NotEmulated',
    `GET ${path} is not served: the Oncely sandbox answers ListFunctions, GetFunction, GetFunctionConfiguration, ` +
      'ListEventSourceMappings and GetEventSourceMapping.',
  );
}

/** A name, a partial ARN (`123456789012:function:name`) or a full ARN, with an optional `:qualifier`. */
function functionNamed(deployment: Deployment, reference: string): DeployedFunction | undefined {
  const name = /(?:function:)?([\w-]{1,64})(?::[\w$-]+)?$/.exec(reference)?.[1];
  return deployment.functions.find((fn) => fn.name === name || fn.arn === reference);
}

function functionArn(deployment: Deployment, reference: string): string {
  const name = decodeURIComponent(reference);
  return name.startsWith('arn:')
    ? name
    : `arn:aws:lambda:${deployment.region}:${deployment.accountId}:function:${name}`;
}

function configuration(fn: DeployedFunction, deployment: Deployment) {
  return {
    FunctionName: fn.name,
    FunctionArn: fn.arn,
    Runtime: fn.runtime,
    Handler: fn.handler,
    Timeout: fn.timeoutSeconds,
    MemorySize: fn.memoryMiB,
    Architectures: fn.architectures,
    ...(fn.role && { Role: fn.role }),
    Environment: { Variables: fn.environment },
    PackageType: 'Zip',
    Version: '$LATEST',
    State: 'Active',
    LastUpdateStatus: 'Successful',
    LastModified: deployment.createdAt.toISOString().replace('Z', '+0000'),
  };
}

function eventSourceMapping(mapping: DeployedMapping, deployment: Deployment) {
  return {
    UUID: mapping.uuid,
    EventSourceMappingArn: `arn:aws:lambda:${deployment.region}:${deployment.accountId}:event-source-mapping:${mapping.uuid}`,
    FunctionArn: mapping.functionArn,
    EventSourceArn: mapping.eventSourceArn,
    BatchSize: mapping.batchSize,
    ...(mapping.maximumBatchingWindowInSeconds !== undefined && {
      MaximumBatchingWindowInSeconds: mapping.maximumBatchingWindowInSeconds,
    }),
    FunctionResponseTypes: mapping.functionResponseTypes,
    ...(mapping.startingPosition && { StartingPosition: mapping.startingPosition }),
    ...(mapping.maximumConcurrency && { ScalingConfig: { MaximumConcurrency: mapping.maximumConcurrency } }),
    ...(mapping.filterPatterns.length > 0 && {
      FilterCriteria: { Filters: mapping.filterPatterns.map((Pattern) => ({ Pattern })) },
    }),
    ...(mapping.onFailure && { DestinationConfig: { OnFailure: { Destination: mapping.onFailure } } }),
    State: mapping.enabled ? 'Enabled' : 'Disabled',
    StateTransitionReason: 'USER_INITIATED',
    LastModified: deployment.createdAt.getTime() / 1000,
  };
}

function notFound(message: string): RestAnswer {
  return failure(404, 'ResourceNotFoundException', message);
}

function failure(status: number, errorType: string, message: string): RestAnswer {
  return { status, errorType, body: { Type: 'User', message } };
}

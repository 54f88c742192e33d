import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { MiddlewareStack } from '@smithy/types';
import { createCloudFormationClient, describeStackOutputs } from '../lib/constructs/deployed-pipeline.js';
import {
  type LeaseRecordsCacheOutputs,
  leaseRecordsCacheFromOutputs,
  MissingStackOutputsError,
  PIPELINE_OUTPUTS,
  type PipelineResources,
  resourcesFromOutputs,
} from '../lib/constructs/pipeline-outputs.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import type { Target } from './command-line.js';
import {
  type LeaseRecordsCache,
  sandboxLeaseRecordsCache,
  stackLeaseRecordsCache,
} from './lease-records-cache.js';
import {
  MissingCredentialsError,
  PipelineUnreachableError,
  StackNotFoundError,
} from './operations-errors.js';
import { type PipelineReadyFile, type ReadyFile, readReadyFile } from './ready-file.js';

/** A running target, ready to operate on: its stack outputs and clients for its services. */
export interface TargetConnection {
  /** Names the target in messages: "the sandbox of ready.json" or "stack Oncely-dev". */
  readonly name: string;
  /** Every output of its stacks (the sandbox's) or of its stack, by key. */
  readonly outputs: Readonly<Record<string, string>>;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  /** How to reach the lease records cache its outputs name (`leaseRecords: 'valkey'`). */
  readonly cacheOf: (cache: LeaseRecordsCacheOutputs) => LeaseRecordsCache;
  close(): void;
}

/** A running pipeline, ready to operate on: its resources and clients for them. */
export interface PipelineConnection extends TargetConnection {
  readonly resources: PipelineResources;
  /**
   * Where its lease records are kept besides the table: the Valkey cache of `leaseRecords: 'valkey'`
   * (DESIGN §3.1), not connected to until `open()`. Absent: every record is in the table.
   */
  readonly leaseRecordsCache?: LeaseRecordsCache;
}

/**
 * Connects to the pipeline of the sandbox a ready file describes (its loopback endpoints,
 * placeholder credentials) or of a deployed stack (the default credential chain and region;
 * resources from its outputs). Requests that find nothing listening fail with a
 * `PipelineUnreachableError` saying what to do.
 */
export async function connect(target: Target): Promise<PipelineConnection> {
  if (target.kind === 'sandbox' && target.outputPrefix === undefined) {
    return connectToSandboxPipeline(target.readyFile, await readReadyFile(target.readyFile, 'resources'));
  }
  // A pipeline picked by its prefix: found among every output, of the sandbox's stacks or the stack's.
  const connection = await connectToOutputs(target);
  try {
    const prefix = target.outputPrefix ?? '';
    return withCache({ ...connection, resources: pipelineOf(connection, prefix) }, prefix);
  } catch (error) {
    connection.close();
    throw error;
  }
}

/** Connects to the pipeline of a running sandbox, from what its ready file holds (`readyFile` names it in errors). */
export function connectToSandboxPipeline(readyFile: string, file: PipelineReadyFile): PipelineConnection {
  const connection = connectToSandbox(readyFile, file);
  try {
    return withCache({ ...connection, resources: file.resources }, '');
  } catch (error) {
    connection.close();
    throw error;
  }
}

/** The pipeline with its lease records cache, when the outputs of the pipeline of `prefix` name one. */
function withCache(pipeline: PipelineConnection, prefix: string): PipelineConnection {
  const cache = leaseRecordsCacheFromOutputs(pipeline.name, pipeline.outputs, prefix);
  return cache ? { ...pipeline, leaseRecordsCache: pipeline.cacheOf(cache) } : pipeline;
}

/** The resources of the pipeline whose outputs carry `prefix`; missing, the error names the prefixes there are. */
function pipelineOf(connection: TargetConnection, prefix: string): PipelineResources {
  const outputList = Object.entries(connection.outputs).map(([OutputKey, OutputValue]) => ({
    OutputKey,
    OutputValue,
  }));
  try {
    return resourcesFromOutputs(connection.name, outputList, prefix);
  } catch (error) {
    if (!(error instanceof MissingStackOutputsError)) throw error;
    const marker = PIPELINE_OUTPUTS.idempotencyTableName;
    const prefixes = Object.keys(connection.outputs)
      .filter((key) => key.endsWith(marker))
      .map((key) => key.slice(0, -marker.length))
      .map((each) => (each === '' ? "'' (no prefix)" : each));
    if (prefixes.length === 0) throw error;
    throw new MissingStackOutputsError(
      `${error.message} Its pipelines' output prefixes: ${prefixes.join(', ')}. Pick one with --output-prefix PREFIX.`,
      { cause: error },
    );
  }
}

/** Connects to a sandbox or a deployed stack as {@link connect} does, needing no pipeline in it: only its outputs. */
export async function connectToOutputs(target: Target): Promise<TargetConnection> {
  if (target.kind === 'sandbox') {
    return connectToSandbox(target.readyFile, await readReadyFile(target.readyFile, 'outputs'));
  }
  return connectToStack(target.stackName, await readStackOutputs(target.stackName), target.valkeyEndpoint);
}

function connectToSandbox(readyFile: string, file: ReadyFile): TargetConnection {
  const { region, endpoints, outputs = {} } = file;
  const sqs = new SQSClient({ ...localAwsConfig(endpoints.sqs), region });
  translateErrors(sqs, sandboxNotRunning(readyFile, 'SQS', endpoints.sqs));
  const dynamodb = new DynamoDBClient({ ...localAwsConfig(endpoints.dynamodb), region });
  translateErrors(dynamodb, sandboxNotRunning(readyFile, 'DynamoDB', endpoints.dynamodb));
  return connection(`the sandbox of ${readyFile}`, outputs, sqs, dynamodb, (cache) =>
    sandboxLeaseRecordsCache(readyFile, file, cache),
  );
}

function sandboxNotRunning(readyFile: string, service: string, endpoint: string) {
  return (cause: unknown) => {
    const code = networkErrorCode(cause);
    if (!code) return cause;
    return new PipelineUnreachableError(
      `The sandbox of ${readyFile} is not running: nothing answers at ${endpoint} (${service}, ${code}). ` +
        `Start it with \`oncely local --ready-file ${readyFile}\`, or give the ready file of the sandbox that runs.`,
      { cause },
    );
  };
}

/** What a failed request to a stack's services means: no credentials, or nothing reachable. */
function stackUnreachable(stackName: string, service: string) {
  return (cause: unknown) => {
    if (isMissingCredentials(cause)) {
      return new MissingCredentialsError(
        `No AWS credentials found to operate stack ${stackName}. Configure them (\`aws configure\`, ` +
          'AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) and try again.',
        { cause },
      );
    }
    const code = networkErrorCode(cause);
    if (!code) return cause;
    return new PipelineUnreachableError(
      `Cannot reach ${service} for stack ${stackName} (${code}: ${(cause as Error).message}). Check your network and ` +
        'AWS_REGION, and AWS_ENDPOINT_URL when the stack is on LocalStack (is LocalStack running?).',
      { cause },
    );
  };
}

async function readStackOutputs(stackName: string): Promise<Record<string, string>> {
  const cloudFormation = await createCloudFormationClient();
  translateErrors(cloudFormation, stackUnreachable(stackName, 'CloudFormation'));
  try {
    return await describeStackOutputs(stackName, cloudFormation);
  } catch (error) {
    if (error instanceof Error && error.name === 'ValidationError' && /does not exist/.test(error.message)) {
      throw new StackNotFoundError(
        `Stack ${stackName} does not exist in ${await cloudFormation.config.region()}. Check the name ` +
          '(the app stack is Oncely-<stage>) and AWS_REGION / AWS_PROFILE.',
        { cause: error },
      );
    }
    throw error;
  } finally {
    cloudFormation.destroy();
  }
}

function connectToStack(
  stackName: string,
  outputs: Record<string, string>,
  valkeyEndpoint?: { host: string; port: number },
): TargetConnection {
  // An endpoint the environment names (LocalStack, moto) must win over the host of the stack's
  // queue URLs, which the SDK would otherwise call and which may not resolve there.
  const endpointGiven = Boolean(process.env.AWS_ENDPOINT_URL_SQS ?? process.env.AWS_ENDPOINT_URL);
  const sqs = new SQSClient({ useQueueUrlAsEndpoint: !endpointGiven });
  translateErrors(sqs, stackUnreachable(stackName, 'SQS'));
  const dynamodb = new DynamoDBClient({});
  translateErrors(dynamodb, stackUnreachable(stackName, 'DynamoDB'));
  return connection(`stack ${stackName}`, outputs, sqs, dynamodb, (cache) =>
    stackLeaseRecordsCache(stackName, cache, valkeyEndpoint, dynamodb),
  );
}

function connection(
  name: string,
  outputs: Record<string, string>,
  sqs: SQSClient,
  dynamodb: DynamoDBClient,
  cacheOf: TargetConnection['cacheOf'],
): TargetConnection {
  return {
    name,
    outputs,
    sqs,
    dynamodb,
    cacheOf,
    close: () => {
      sqs.destroy();
      dynamodb.destroy();
    },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: any SDK v3 client, whatever its input/output types
type SdkClient = { middlewareStack: MiddlewareStack<any, any> };

/**
 * Replaces a request's final error (after the SDK's retries: the `initialize` step wraps them) by
 * what `translate` makes of it, so every command reports an unreachable target the same way.
 */
function translateErrors(client: SdkClient, translate: (error: unknown) => unknown): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        throw translate(error);
      }
    },
    { step: 'initialize', name: 'oncelyTargetErrors' },
  );
}

/** Socket errors meaning nothing answered at the endpoint; the SDK passes Node's error through. */
const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

function networkErrorCode(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code && NETWORK_ERROR_CODES.has(code) ? code : undefined;
}

function isMissingCredentials(error: unknown): boolean {
  return error instanceof Error && error.name === 'CredentialsProviderError';
}

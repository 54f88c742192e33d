import { readFile } from 'node:fs/promises';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { MiddlewareStack } from '@smithy/types';
import { z } from 'zod';
import { describeDeployedPipeline } from '../cdk/deployed-pipeline.js';
import { PIPELINE_OUTPUTS, type PipelineOutputKey, type PipelineResources } from '../cdk/pipeline-outputs.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import type { Target } from './command-line.js';
import {
  MissingCredentialsError,
  PipelineUnreachableError,
  ReadyFileError,
  StackNotFoundError,
} from './operations-errors.js';

/** A running pipeline, ready to operate on: its resources and clients for them. */
export interface PipelineConnection {
  /** Names the target in messages: "the sandbox of ready.json" or "stack Oncely-dev". */
  readonly name: string;
  readonly resources: PipelineResources;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  close(): void;
}

/**
 * Connects to the sandbox a ready file describes (its loopback endpoints, placeholder credentials)
 * or to a deployed stack (the default credential chain and region; resources from its outputs).
 * Requests that find nothing listening fail with a `PipelineUnreachableError` saying what to do.
 */
export function connect(target: Target): Promise<PipelineConnection> {
  return target.kind === 'sandbox' ? connectToSandbox(target.readyFile) : connectToStack(target.stackName);
}

const readyFileSchema = z.object({
  region: z.string().min(1),
  endpoints: z.object({ sqs: z.url(), dynamodb: z.url() }),
  resources: z.record(
    z.enum(Object.keys(PIPELINE_OUTPUTS) as [PipelineOutputKey, ...PipelineOutputKey[]]),
    z.string().min(1),
  ),
});

async function connectToSandbox(readyFile: string): Promise<PipelineConnection> {
  const { region, endpoints, resources } = await readReadyFile(readyFile);
  const sqs = new SQSClient({ ...localAwsConfig(endpoints.sqs), region });
  translateErrors(sqs, sandboxNotRunning(readyFile, 'SQS', endpoints.sqs));
  const dynamodb = new DynamoDBClient({ ...localAwsConfig(endpoints.dynamodb), region });
  translateErrors(dynamodb, sandboxNotRunning(readyFile, 'DynamoDB', endpoints.dynamodb));
  return connection(`the sandbox of ${readyFile}`, resources, sqs, dynamodb);
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

async function readReadyFile(readyFile: string): Promise<z.infer<typeof readyFileSchema>> {
  let text: string;
  try {
    text = await readFile(readyFile, 'utf8');
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    throw new ReadyFileError(
      `Cannot read the ready file ${readyFile} (${code ?? String(cause)}): is \`oncely local --ready-file ${readyFile}\` running?`,
      { cause },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new ReadyFileError(`${readyFile} is not JSON, so it is not the ready file of \`oncely local\`.`, {
      cause,
    });
  }
  const parsed = readyFileSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ReadyFileError(
      `${readyFile} is not a ready file of \`oncely local\` from this version (${problems.join('; ')}). ` +
        'Restart the sandbox with `oncely local --ready-file PATH` to write a current one.',
    );
  }
  return parsed.data;
}

async function connectToStack(stackName: string): Promise<PipelineConnection> {
  const unreachable = (service: string) => (cause: unknown) => {
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
  const cloudFormation = new CloudFormationClient({});
  translateErrors(cloudFormation, unreachable('CloudFormation'));
  let resources: PipelineResources;
  try {
    resources = await describeDeployedPipeline(stackName, cloudFormation);
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
  const sqs = new SQSClient({});
  translateErrors(sqs, unreachable('SQS'));
  const dynamodb = new DynamoDBClient({});
  translateErrors(dynamodb, unreachable('DynamoDB'));
  return connection(`stack ${stackName}`, resources, sqs, dynamodb);
}

function connection(
  name: string,
  resources: PipelineResources,
  sqs: SQSClient,
  dynamodb: DynamoDBClient,
): PipelineConnection {
  return {
    name,
    resources,
    sqs,
    dynamodb,
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

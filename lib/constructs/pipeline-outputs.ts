import { OncelyError } from '../../lambdas/common/oncely-error.js';
/**
 * The outputs an `OncelyPipeline` adds to its stack, by which other services, the operations CLI
 * and the sandbox's ready file find it. One constant each, so the construct and its readers cannot
 * drift apart. Their logical ids are these names after the pipeline's `outputPrefix` ('' by default).
 */
export const PIPELINE_OUTPUTS = {
  publisherFunctionName: 'PublisherFunctionName',
  publisherFunctionArn: 'PublisherFunctionArn',
  consumerFunctionName: 'ConsumerFunctionName',
  queueUrl: 'QueueUrl',
  queueArn: 'QueueArn',
  dlqUrl: 'DlqUrl',
  dlqArn: 'DlqArn',
  idempotencyTableName: 'IdempotencyTableName',
  /** The idempotency records' lifetime: what the dedup horizon (DESIGN §2) is computed from. */
  idempotencyTtlSeconds: 'IdempotencyTtlSeconds',
} as const;

/**
 * The log groups of the pipeline's functions, for the runbook's `aws logs tail` (docs/operations.md):
 * the construct gives each function a log group of its own, whose name CloudFormation generates.
 * Stack outputs beside {@link PIPELINE_OUTPUTS}, not among them: the operations CLI needs none of them,
 * so a stack deployed before they existed still serves it.
 */
export const PIPELINE_LOG_GROUP_OUTPUTS = {
  consumer: 'ConsumerLogGroupName',
  publisher: 'PublisherLogGroupName',
  monitor: 'MonitorLogGroupName',
} as const;

/**
 * The lease records cache of a pipeline with `leaseRecords: 'valkey'` (DESIGN §3.1), for `oncely
 * in-doubt` and `oncely history`, which read and resolve its records: beside {@link PIPELINE_OUTPUTS},
 * present only on such a pipeline. `endpoint` is the cache's `host:port` (TLS; inside the VPC, so
 * reached from outside through a tunnel: docs/operations.md); `name`, the serverless cache's name,
 * which an IAM token is signed for; `userId`, the ElastiCache user the consumer connects as.
 */
export const PIPELINE_CACHE_OUTPUTS = {
  endpoint: 'LeaseRecordsCacheEndpoint',
  name: 'LeaseRecordsCacheName',
  userId: 'LeaseRecordsCacheUserId',
} as const;

/** Where a pipeline's lease records cache is and who connects to it, from its outputs. */
export interface LeaseRecordsCacheOutputs {
  /** The cache's own endpoint: TLS names its certificate by `host`. */
  endpoint: { host: string; port: number };
  name: string;
  userId: string;
}

/**
 * The lease records cache of the pipeline whose outputs carry `prefix`, or undefined when it keeps
 * its records in the table (no `LeaseRecordsCacheEndpoint`). One output missing of three, or an
 * endpoint that is not `host:port`, is a `MissingStackOutputsError`.
 */
export function leaseRecordsCacheFromOutputs(
  stackName: string,
  outputs: Readonly<Record<string, string>>,
  prefix = '',
): LeaseRecordsCacheOutputs | undefined {
  const value = (key: keyof typeof PIPELINE_CACHE_OUTPUTS) =>
    outputs[`${prefix}${PIPELINE_CACHE_OUTPUTS[key]}`];
  const [endpoint, name, userId] = [value('endpoint'), value('name'), value('userId')];
  if (!endpoint && !name && !userId) return undefined;
  const at = endpoint?.lastIndexOf(':') ?? -1;
  const port = Number(endpoint?.slice(at + 1));
  if (!endpoint || !name || !userId || at <= 0 || !Number.isInteger(port) || port <= 0) {
    throw new MissingStackOutputsError(
      `Stack ${stackName} has a lease records cache but not its outputs ${Object.values(
        PIPELINE_CACHE_OUTPUTS,
      )
        .map((key) => `${prefix}${key}`)
        .join(', ')} as this version writes them (${prefix}${PIPELINE_CACHE_OUTPUTS.endpoint} is ` +
        `"${endpoint ?? ''}", expected host:port). Deploy it with \`npx cdk deploy\` and try again.`,
    );
  }
  return { endpoint: { host: endpoint.slice(0, at), port }, name, userId };
}

/** A resource of `PIPELINE_OUTPUTS`, e.g. `queueUrl`. */
export type PipelineOutputKey = keyof typeof PIPELINE_OUTPUTS;

/** The pipeline's resources as other tools address them: stack outputs, or the sandbox's ready file. */
export type PipelineResources = Record<PipelineOutputKey, string>;

/** A stack that lacks outputs Oncely needs: not an Oncely stack, or one from another version. */
export class MissingStackOutputsError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'MissingStackOutputsError';
  /** `false`: the stack's outputs stay the same; name an Oncely stack of this version. */
  readonly retryable = false;
}

/**
 * Maps a stack's outputs (DescribeStacks' `Outputs`, or the sandbox's resolved template outputs)
 * onto the resources of the pipeline whose outputs carry `prefix`, naming every output missing.
 */
export function resourcesFromOutputs(
  stackName: string,
  outputs: readonly { OutputKey?: string; OutputValue?: string }[],
  prefix = '',
): PipelineResources {
  const byKey = new Map(outputs.map((output) => [output.OutputKey, output.OutputValue]));
  const resources: Partial<PipelineResources> = {};
  const missing: string[] = [];
  for (const [key, outputKey] of Object.entries(PIPELINE_OUTPUTS) as [PipelineOutputKey, string][]) {
    const value = byKey.get(`${prefix}${outputKey}`);
    if (value) resources[key] = value;
    else missing.push(`${prefix}${outputKey}`);
  }
  if (missing.length > 0) {
    throw new MissingStackOutputsError(
      `Stack ${stackName} has no output ${missing.join(', ')}. Does it contain an OncelyPipeline of this version ` +
        '(with that outputPrefix)? Deploy it with `npx cdk deploy` and try again.',
    );
  }
  return resources as PipelineResources;
}

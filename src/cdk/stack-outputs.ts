/**
 * The stack outputs other services (and the end-to-end suite, the operations CLI) find the
 * pipeline by. One constant each, so the stack and its readers cannot drift apart.
 */
export const STACK_OUTPUTS = {
  publisherFunctionName: 'PublisherFunctionName',
  publisherFunctionArn: 'PublisherFunctionArn',
  consumerFunctionName: 'ConsumerFunctionName',
  queueUrl: 'QueueUrl',
  queueArn: 'QueueArn',
  dlqUrl: 'DlqUrl',
  dlqArn: 'DlqArn',
  idempotencyTableName: 'IdempotencyTableName',
  ledgerTableName: 'LedgerTableName',
  /** The idempotency records' lifetime: what the dedup horizon (DESIGN §2) is computed from. */
  idempotencyTtlSeconds: 'IdempotencyTtlSeconds',
} as const;

export type StackOutputKey = keyof typeof STACK_OUTPUTS;

/** The pipeline's resources as other tools address them: stack outputs, or the sandbox's ready file. */
export type PipelineResources = Record<StackOutputKey, string>;

/** A stack that lacks outputs Oncely needs: not an Oncely stack, or one from another version. */
export class MissingStackOutputsError extends Error {
  override readonly name = 'MissingStackOutputsError';
}

/**
 * Maps a deployed stack's outputs (DescribeStacks' `Outputs`) onto the pipeline's resources,
 * naming every output that is missing.
 */
export function resourcesFromOutputs(
  stackName: string,
  outputs: readonly { OutputKey?: string; OutputValue?: string }[],
): PipelineResources {
  const byKey = new Map(outputs.map((output) => [output.OutputKey, output.OutputValue]));
  const resources: Partial<PipelineResources> = {};
  const missing: string[] = [];
  for (const [key, outputKey] of Object.entries(STACK_OUTPUTS) as [StackOutputKey, string][]) {
    const value = byKey.get(outputKey);
    if (value) resources[key] = value;
    else missing.push(outputKey);
  }
  if (missing.length > 0) {
    throw new MissingStackOutputsError(
      `Stack ${stackName} has no output ${missing.join(', ')}. Is it an Oncely stack deployed from this version? ` +
        'Deploy it with `npx cdk deploy` and try again.',
    );
  }
  return resources as PipelineResources;
}

import type { OutboxLayout } from '../../lambdas/outbox/layout.js';
import { MissingStackOutputsError } from './pipeline-outputs.js';

/**
 * The outputs an `OncelyOutbox` adds to its stack, by which `oncely outbox list` finds it (in a
 * deployed stack, or the sandbox's ready file). Their logical ids are these names after the
 * outbox's `outputPrefix` ('' by default).
 */
export const OUTBOX_OUTPUTS = {
  tableName: 'OutboxTableName',
  /** The table's key attributes: `pk` and `sk` on the outbox's own table, yours on your table. */
  partitionKey: 'OutboxPartitionKey',
  sortKey: 'OutboxSortKey',
  /** The stuck bound, in seconds: what `oncely outbox list --stuck` lists messages older than. */
  stuckAfterSeconds: 'OutboxStuckAfterSeconds',
} as const;

export type OutboxOutputKey = keyof typeof OUTBOX_OUTPUTS;

/**
 * The log groups of the relay and the sweeper, for the runbook's `aws logs tail`: outputs beside
 * {@link OUTBOX_OUTPUTS}, which `oncely outbox list` does not need.
 */
export const OUTBOX_LOG_GROUP_OUTPUTS = {
  relay: 'OutboxRelayLogGroupName',
  sweeper: 'OutboxSweeperLogGroupName',
} as const;

/** An outbox as the operations commands address it. */
export interface OutboxResources extends OutboxLayout {
  /** The stuck bound, in seconds (`OutboxSettings.stuckAfter`). */
  stuckAfterSeconds: number;
}

/**
 * The outbox whose outputs carry `prefix`, from a stack's outputs by key (DescribeStacks', or the
 * sandbox's resolved ones), naming every output missing. `where` names them in the message:
 * "stack Shop-dev", "the sandbox of ready.json".
 */
export function outboxFromOutputs(
  where: string,
  outputs: Readonly<Record<string, string>>,
  prefix = '',
): OutboxResources {
  const values: Partial<Record<OutboxOutputKey, string>> = {};
  const missing: string[] = [];
  for (const [key, outputKey] of Object.entries(OUTBOX_OUTPUTS) as [OutboxOutputKey, string][]) {
    const value = outputs[`${prefix}${outputKey}`];
    if (value) values[key] = value;
    else missing.push(`${prefix}${outputKey}`);
  }
  const stuckAfterSeconds = Number(values.stuckAfterSeconds);
  if (values.stuckAfterSeconds !== undefined && !Number.isInteger(stuckAfterSeconds)) {
    missing.push(`a whole number of seconds in ${prefix}${OUTBOX_OUTPUTS.stuckAfterSeconds}`);
  }
  if (missing.length > 0) {
    throw new MissingStackOutputsError(
      `No output ${missing.join(', ')} in ${where}. Does it contain an OncelyOutbox of this version (with that ` +
        'outputPrefix)? Deploy it with `npx cdk deploy` (or restart `oncely local`) and try again.',
    );
  }
  const { tableName, partitionKey, sortKey } = values as Record<OutboxOutputKey, string>;
  return { tableName, partitionKey, sortKey, stuckAfterSeconds };
}

import type { SQSClient } from '@aws-sdk/client-sqs';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';
import type { Terminal } from './terminal.js';

/** A redrive moves up to this many messages without asking. */
export const MOVES_WITHOUT_ASKING = 10;

/**
 * Before a redrive that may move more than a few messages, asks the operator (unless `--yes`,
 * `--dry-run`, or a `--limit` of at most a few). Returns why it refuses, or undefined to go on.
 * Without a terminal and without `--yes` it refuses: a script must say it means it.
 */
export async function confirmRedrive(
  sqs: SQSClient,
  resources: { dlqUrl: string; queueUrl: string },
  command: { yes: boolean; dryRun: boolean; limit?: number; groupId?: string; key?: string },
  terminal: Pick<Terminal, 'ask'>,
): Promise<string | undefined> {
  if (command.yes || command.dryRun || (command.limit ?? Number.POSITIVE_INFINITY) <= MOVES_WITHOUT_ASKING) {
    return undefined;
  }
  const count = await messagesInQueue(sqs, resources.dlqUrl);
  if (count <= MOVES_WITHOUT_ASKING) return undefined;
  const filtered = command.groupId !== undefined || command.key !== undefined ? ' (those selected)' : '';
  const scope = `up to ${Math.min(count, command.limit ?? count)} of the ${count} messages in ${resources.dlqUrl}${filtered}`;
  const answer = await terminal.ask(`Move ${scope} back to ${resources.queueUrl}? [y/N] `);
  if (answer === undefined) {
    return (
      `Not moving ${scope} without confirmation, and there is no terminal to ask on: add --yes ` +
      '(or --dry-run to see what would move, --limit N to move a few).'
    );
  }
  return answer ? undefined : 'Nothing moved: not confirmed.';
}

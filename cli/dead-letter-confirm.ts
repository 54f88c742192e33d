import { createInterface } from 'node:readline/promises';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';

/** Asks a yes/no question; true for yes. */
export type Confirm = (question: string) => Promise<boolean>;

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
  confirm: Confirm | undefined = terminalConfirm(),
): Promise<string | undefined> {
  if (command.yes || command.dryRun || (command.limit ?? Number.POSITIVE_INFINITY) <= MOVES_WITHOUT_ASKING) {
    return undefined;
  }
  const count = await messagesInQueue(sqs, resources.dlqUrl);
  if (count <= MOVES_WITHOUT_ASKING) return undefined;
  const filtered = command.groupId !== undefined || command.key !== undefined ? ' (those selected)' : '';
  const scope = `up to ${Math.min(count, command.limit ?? count)} of the ${count} messages in ${resources.dlqUrl}${filtered}`;
  if (!confirm) {
    return (
      `Not moving ${scope} without confirmation, and there is no terminal to ask on: add --yes ` +
      '(or --dry-run to see what would move, --limit N to move a few).'
    );
  }
  if (await confirm(`Move ${scope} back to ${resources.queueUrl}? [y/N] `)) return undefined;
  return 'Nothing moved: not confirmed.';
}

/** Asks on the terminal; none when standard input or output is not one. */
function terminalConfirm(): Confirm | undefined {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return undefined;
  return async (question) => {
    const terminal = createInterface({ input: process.stdin, output: process.stdout });
    try {
      return /^y(es)?$/i.test((await terminal.question(question)).trim());
    } finally {
      terminal.close();
    }
  };
}

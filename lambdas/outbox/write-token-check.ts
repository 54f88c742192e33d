import { setTimeout as sleep } from 'node:timers/promises';
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { backoffDelayMs, type RetryPolicy } from '../common/backoff.js';
import { OutboxWriteOutcomeUnknownError } from './errors.js';
import { OUTBOX_ATTRIBUTES as A, itemKey, type OutboxLayout } from './layout.js';

/** How often the keys DynamoDB leaves unprocessed (it throttled them) are asked for, in all. */
export const TOKEN_CHECK_RETRY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 50, maxDelayMs: 1_000 };

/**
 * Whether an earlier call of a write committed: every one of its messages' outbox items is there,
 * put under its `token` (DESIGN §9, "Retrying a write"). Read strongly consistently; the keys a
 * BatchGetItem leaves unprocessed are asked for again with backoff. When they cannot all be read,
 * the answer is unknown, never "no": OutboxWriteOutcomeUnknownError.
 */
export async function committedUnder(
  documents: DynamoDBDocumentClient,
  layout: OutboxLayout,
  messageKeys: readonly string[],
  token: string,
  policy: RetryPolicy = TOKEN_CHECK_RETRY,
): Promise<boolean> {
  const tokens = new Map<string, unknown>();
  let request = {
    Keys: messageKeys.map((key) => itemKey(layout, key)),
    ConsistentRead: true,
    ProjectionExpression: '#key, #token',
    ExpressionAttributeNames: { '#key': A.key, '#token': A.writeToken },
  };
  for (let attempt = 1; ; attempt++) {
    const answer = await documents
      .send(new BatchGetCommand({ RequestItems: { [layout.tableName]: request } }))
      .catch((error: unknown) => {
        throw unknownOutcome(token, `reading them back failed: ${String(error)}`, error);
      });
    for (const item of answer.Responses?.[layout.tableName] ?? [])
      tokens.set(String(item[A.key]), item[A.writeToken]);
    const unprocessed = answer.UnprocessedKeys?.[layout.tableName];
    if (!unprocessed?.Keys?.length) break;
    if (attempt >= policy.maxAttempts) {
      throw unknownOutcome(
        token,
        `DynamoDB left ${unprocessed.Keys.length} of its ${messageKeys.length} messages unread after ${attempt} tries`,
      );
    }
    request = { ...request, Keys: unprocessed.Keys as typeof request.Keys };
    await sleep(backoffDelayMs(attempt, policy));
  }
  return messageKeys.every((key) => tokens.get(key) === token);
}

function unknownOutcome(token: string, why: string, cause?: unknown): OutboxWriteOutcomeUnknownError {
  return new OutboxWriteOutcomeUnknownError(
    `An earlier call with clientRequestToken "${token}" may have committed this write, and ${why}: ` +
      'retry the same write with the same token.',
    cause === undefined ? undefined : { cause },
  );
}

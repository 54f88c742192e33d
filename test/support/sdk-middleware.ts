import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';

/**
 * Makes chosen requests of a DynamoDB or SQS client fail before they leave it: `select` sees the
 * operation and the input. Returns a switch to stop failing.
 */
export function failRequests(
  client: DynamoDBClient | SQSClient,
  select: (operation: string, input: Record<string, unknown>) => boolean,
  error: () => Error = () => new Error('injected failure'),
) {
  let active = true;
  let failures = 0;
  // Both clients' stacks take the same middleware; TypeScript cannot call a union of their add methods.
  (client.middlewareStack as DynamoDBClient['middlewareStack']).add(
    (next, context) => async (args) => {
      const operation = String(context.commandName).replace(/Command$/, '');
      if (active && select(operation, args.input as Record<string, unknown>)) {
        failures++;
        throw error();
      }
      return next(args);
    },
    { step: 'build', name: `testFailure${Math.random()}` },
  );
  return {
    get failures() {
      return failures;
    },
    stop: () => {
      active = false;
    },
  };
}

/**
 * Makes chosen requests apply but lose their answer: the request reaches DynamoDB (or SQS) and is applied,
 * then a retryable error replaces the answer, inside the SDK's retry loop — so the SDK sends the
 * same request again, as after a dropped connection. `select` sees the operation and the
 * marshalled input; `times` bounds how many requests lose their answer.
 */
export function loseAnswers(
  client: DynamoDBClient | SQSClient,
  select: (operation: string, input: Record<string, unknown>) => boolean,
  times = 1,
) {
  let lost = 0;
  // Both clients' stacks take the same middleware; TypeScript cannot call a union of their add methods.
  (client.middlewareStack as DynamoDBClient['middlewareStack']).add(
    (next, context) => async (args) => {
      const result = await next(args);
      const operation = String(context.commandName).replace(/Command$/, '');
      if (lost < times && select(operation, args.input as Record<string, unknown>)) {
        lost++;
        throw Object.assign(new Error('injected: the answer was lost after the request was applied'), {
          name: 'TimeoutError',
          $metadata: {},
        });
      }
      return result;
    },
    // The deserialize step runs inside the retry middleware, so the SDK retries this error.
    { step: 'deserialize', name: `loseAnswer${Math.random()}` },
  );
  return {
    get lost() {
      return lost;
    },
  };
}

/**
 * Makes DynamoDB meet every TransactWriteItems call's token as new, as it does once the token's
 * 10-minute window has passed: each call's token is swapped for a fresh one before it leaves (the
 * SDK's retries of that call keep it). The caller's code still sees its own token.
 */
export function forgetTokens(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) =>
      context.commandName === 'TransactWriteItemsCommand'
        ? next({ ...args, input: { ...(args.input as object), ClientRequestToken: randomUUID() } })
        : next(args),
    { step: 'initialize', name: `forgetTokens${Math.random()}` },
  );
}

/** Whether a marshalled UpdateItem/PutItem input sets `status` to `status` (by its `:status` value). */
export function setsStatus(input: Record<string, unknown>, status: string): boolean {
  const values = input.ExpressionAttributeValues as Record<string, { S?: string }> | undefined;
  return (
    Object.values(values ?? {}).some((value) => value?.S === status) &&
    JSON.stringify(input).includes('#status')
  );
}

/**
 * Whether a request is one of an acquire's writes (DESIGN §3): the PutItem that creates a record
 * IN_PROGRESS, or the UpdateItem that takes an existing one. `write` picks one of the two. The
 * input may be marshalled or not, as the middleware's step sees it.
 */
export function isAcquire(
  operation: string,
  input: Record<string, unknown>,
  write?: 'put' | 'update',
): boolean {
  const status = (input.Item as { status?: string | { S?: string } } | undefined)?.status;
  const put = operation === 'PutItem' && (typeof status === 'string' ? status : status?.S) === 'IN_PROGRESS';
  const update =
    operation === 'UpdateItem' && String(input.UpdateExpression).startsWith('SET #status = :inProgress');
  return write === 'put' ? put : write === 'update' ? update : put || update;
}

/** The record id a request names (marshalled or not): its key's, or the item's it puts. */
export function recordIdOf(input: Record<string, unknown>): string | undefined {
  const id = ((input.Key ?? input.Item) as { id?: string | { S?: string } } | undefined)?.id;
  return typeof id === 'string' ? id : id?.S;
}

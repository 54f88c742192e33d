import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * Makes chosen requests fail before they leave the client: `select` sees the operation and the
 * marshalled input. Returns a switch to stop failing.
 */
export function failRequests(
  client: DynamoDBClient,
  select: (operation: string, input: Record<string, unknown>) => boolean,
  error: () => Error = () => new Error('injected failure'),
) {
  let active = true;
  let failures = 0;
  client.middlewareStack.add(
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

import type { MiddlewareStack } from '@smithy/types';

/**
 * Counts the requests an AWS SDK client sends, by operation and per attempt (SDK retries count
 * too): the figure that DynamoDB and SQS bill for, used by the demo, the tests and the benchmarks.
 */
// biome-ignore lint/suspicious/noExplicitAny: any SDK v3 client, whatever its input/output types
export function countRequests(client: { middlewareStack: MiddlewareStack<any, any> }) {
  const counts: Record<string, number> = {};
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String(context.commandName).replace(/Command$/, '');
      counts[operation] = (counts[operation] ?? 0) + 1;
      return next(args);
    },
    { step: 'deserialize', name: `requestCounter-${Math.random()}` },
  );
  return {
    counts,
    total: () => Object.values(counts).reduce((sum, n) => sum + n, 0),
    reset: () => {
      for (const key of Object.keys(counts)) delete counts[key];
    },
  };
}

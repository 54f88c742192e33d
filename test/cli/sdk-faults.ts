import { randomUUID } from 'node:crypto';
import type { MiddlewareStack } from '@smithy/types';

// biome-ignore lint/suspicious/noExplicitAny: any SDK v3 client, whatever its input/output types
export type SdkClient = { middlewareStack: MiddlewareStack<any, any> };

/** A request's input as the command was given it (document client inputs included). */
export type RequestInput = Record<string, unknown>;

/**
 * Runs `act` before each request of `client` that `select` picks, above the SDK's retries: a
 * throwing `act` fails the request for good before anything is sent, as a request whose retries
 * all failed; another `act` lets something else happen first (a concurrent operator).
 */
export function beforeRequests(
  client: SdkClient,
  select: (input: RequestInput) => boolean,
  act: () => Promise<void>,
): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      if (select(args.input as RequestInput)) await act();
      return next(args);
    },
    { step: 'initialize', name: `beforeRequests-${randomUUID()}` },
  );
}

/** An `act` for {@link beforeRequests} that fails the request. */
export const fail = (): Promise<void> => Promise.reject(new Error('injected: the connection dropped'));

/** A `select` that picks the first request matching `matches` only. */
export function once(matches: (input: RequestInput) => boolean): (input: RequestInput) => boolean {
  let done = false;
  return (input) => {
    if (done || !matches(input)) return false;
    done = true;
    return true;
  };
}

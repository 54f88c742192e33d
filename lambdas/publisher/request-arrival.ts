import type { MiddlewareStack } from '@smithy/types';

/** Errors of a connection that was never made: no byte of the request left this process. */
const NOT_CONNECTED_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * Watches one AWS SDK command for whether any of its attempts may have been applied by the service,
 * which the error it finally fails with cannot tell: a request may have been applied once it was
 * handed to the HTTP handler, unless the service refused it (a 4xx answer) or no connection could
 * be made. Errors raised before that point (a client-side validation, signing or credentials
 * error, or the caller's own middleware) leave it false. Returns the question to ask afterwards.
 */
export function watchArrival<Input extends object, Output extends object>(command: {
  readonly middlewareStack: MiddlewareStack<Input, Output>;
}): () => boolean {
  let mayHaveArrived = false;
  command.middlewareStack.add(
    (next) => async (args) => {
      try {
        const result = await next(args);
        const status = (result.response as { statusCode?: number } | undefined)?.statusCode;
        // Any answer but a refusal: received, maybe applied, whatever the deserializer makes of it.
        if (status === undefined || status < 400 || status >= 500) mayHaveArrived = true;
        return result;
      } catch (error) {
        const code = (error as { code?: unknown } | null)?.code;
        if (typeof code !== 'string' || !NOT_CONNECTED_CODES.has(code)) mayHaveArrived = true;
        throw error;
      }
    },
    // The innermost step: it wraps each attempt's HTTP exchange and nothing else.
    { step: 'deserialize', priority: 'low', name: 'oncelyArrivalWatch' },
  );
  return () => mayHaveArrived;
}

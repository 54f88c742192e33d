import { refuseUnknownKeys } from './known-keys.js';
import { loadOpenTelemetry } from './open-telemetry.js';
import { sanitizedTraceContext, TRACE_CONTEXT_KEYS, type TraceContext } from './trace-context.js';

/** Lambda's variable for the invocation's X-Ray trace header, set when the function traces. */
const X_RAY_HEADER_ENV = '_X_AMZN_TRACE_ID';

/**
 * The caller's trace context, for the messages it publishes: what the registered OpenTelemetry
 * propagator injects from the active context (W3C's `traceparent` and `tracestate` with the SDKs'
 * default), and the X-Ray header of the Lambda invocation, if any. Nothing without either.
 */
async function captureTraceContext(): Promise<TraceContext | undefined> {
  const api = await loadOpenTelemetry();
  const carrier: Record<string, unknown> = {};
  // No SDK registered: the API's propagator is a no-op and injects nothing.
  api?.propagation.inject(api.context.active(), carrier);
  const awsTraceHeader = process.env[X_RAY_HEADER_ENV];
  return sanitizedTraceContext({ ...carrier, ...(awsTraceHeader ? { awsTraceHeader } : {}) });
}

/**
 * The context a producer sends with its messages (`publish`, `Outbox.write`, named by `where`): the
 * one it gave (its valid fields; an unknown field is refused), none for `false`, or by default the
 * one captured from its environment.
 */
export async function producerTraceContext(
  option: TraceContext | false | undefined,
  where: string,
): Promise<TraceContext | undefined> {
  if (option === false) return undefined;
  if (option !== undefined) {
    refuseUnknownKeys(`${where}({ traceContext })`, option, TRACE_CONTEXT_KEYS);
    return sanitizedTraceContext(option as Record<string, unknown>);
  }
  return captureTraceContext();
}

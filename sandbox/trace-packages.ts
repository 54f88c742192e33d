import { createRequire } from 'node:module';

/** What trace-layer.mjs loads in each function: OpenTelemetry's API and its SDK's parts. */
export const TRACE_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/context-async-hooks',
  '@opentelemetry/core',
] as const;

/** The packages of {@link TRACE_PACKAGES} not installed where the trace layer looks for them (beside Oncely). */
export function missingTracePackages(): string[] {
  const require = createRequire(import.meta.url);
  return TRACE_PACKAGES.filter((name) => {
    try {
      require.resolve(name);
      return false;
    } catch {
      return true;
    }
  });
}

/**
 * How the tracing benchmark runs the consumer: as built before tracing existed (an earlier commit's
 * package), then with tracing's code and `@opentelemetry/api` not installed (as a project without
 * it), installed with no SDK registered, and installed with an SDK registered (as the ADOT layer
 * registers one).
 */
export const TRACING_VARIANTS = ['before', 'absent', 'api', 'sdk'] as const;
export type TracingVariant = (typeof TRACING_VARIANTS)[number];

export const VARIANT_NAMES: Record<TracingVariant, string> = {
  before: 'before tracing (the package at the commit before it)',
  absent: '`@opentelemetry/api` absent',
  api: 'the API installed, no SDK',
  sdk: 'the API and an SDK (spans made, exporter a no-op)',
};

/** One run's figures, as `variant-run.ts` prints them. */
export interface VariantRun {
  variant: TracingVariant;
  messages: number;
  /** The thread's CPU per message (Linux's /proc) over the unprofiled batches. */
  cpuMsPerMessage: number;
  /** Oncely's own code's share of it, by the profiled batches' samples. */
  ownMsPerMessage: number;
  /** Other libraries' share (Powertools, Middy, and OpenTelemetry's API and SDK). */
  librariesMsPerMessage: number;
  /** Spans the SDK ended per message: 1 with an SDK (each record's), 0 otherwise. */
  spansPerMessage: number;
}

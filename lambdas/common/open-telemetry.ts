/** `@opentelemetry/api`'s module, as `import()` gives it. */
export type OpenTelemetryApi = typeof import('@opentelemetry/api');

let loading: Promise<OpenTelemetryApi | undefined> | undefined;

/**
 * `@opentelemetry/api`, loaded once per process on first use; nothing when it is not installed (an
 * optional peer, DESIGN §6). A bundler that cannot resolve it leaves the `import()` as it is, so a
 * bundle built without it carries none of it, and the import fails at run time, once.
 */
export function loadOpenTelemetry(): Promise<OpenTelemetryApi | undefined> {
  loading ??= import('@opentelemetry/api').catch(() => undefined);
  return loading;
}

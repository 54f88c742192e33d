import type { Plugin } from 'esbuild';

/**
 * Builds as a project that does not install the optional peer `@opentelemetry/api` (the default
 * install): esbuild then leaves its `import()` unresolved and the bundle carries none of it. (4) and
 * (6) build so; (5c) builds both ways and reports the difference.
 */
export const WITHOUT_OPENTELEMETRY_API: Plugin = {
  name: 'without-opentelemetry-api',
  setup: (plugin) => plugin.onResolve({ filter: /^@opentelemetry\/api$/ }, () => ({ external: true })),
};

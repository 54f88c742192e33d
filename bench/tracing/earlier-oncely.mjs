// Registered with `node --import` in the benchmark's "before" runs: `oncely/*` resolves to the
// package built from an earlier commit (ONCELY_BENCH_EARLIER: that tree's root, whose dist/ is
// built), so that the same benchmark code runs the consumer as it was before tracing.
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
    import { readFileSync } from 'node:fs';
    import { join } from 'node:path';
    import { pathToFileURL } from 'node:url';
    const root = process.env.ONCELY_BENCH_EARLIER;
    const { exports } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    export async function resolve(specifier, context, next) {
      const entry = specifier.startsWith('oncely/') ? exports['./' + specifier.slice(7)] : undefined;
      if (entry) return { url: pathToFileURL(join(root, entry.default)).href, shortCircuit: true };
      return next(specifier, context);
    }
  `)}`,
);

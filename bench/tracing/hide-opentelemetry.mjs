// Registered with `node --import` in the benchmark's "absent" runs: `@opentelemetry/api` cannot be
// found, as in a project that does not install it, though this repository does.
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
    export async function resolve(specifier, context, next) {
      if (specifier === '@opentelemetry/api') {
        throw Object.assign(new Error("Cannot find package '@opentelemetry/api'"), { code: 'ERR_MODULE_NOT_FOUND' });
      }
      return next(specifier, context);
    }
  `)}`,
);

import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * What Lambda's Node.js runtime provides beside a function's code: the AWS SDK v3 and its Smithy
 * packages, which NodejsFunction leaves out of bundles for that reason (`@aws-sdk/*` by default).
 */
const RUNTIME_SCOPES = ['@aws-sdk', '@smithy'];

/**
 * Makes the packages Lambda's runtime provides resolvable from the assets in `assemblyDirectory`,
 * as Lambda does for the code in its task root, and nothing else: a `node_modules` beside the assets
 * with a link to each installed package of those scopes, taken from the nearest `node_modules` of
 * each directory of `searchFrom` in turn (the app's own versions first).
 */
export function provideRuntimeModules(assemblyDirectory: string, searchFrom: string[]): void {
  for (const scope of RUNTIME_SCOPES) {
    const linked = join(assemblyDirectory, 'node_modules', scope);
    for (const start of searchFrom) {
      const installed = nearest(resolve(start), join('node_modules', scope));
      if (!installed) continue;
      for (const name of readdirSync(installed)) {
        const link = join(linked, name);
        if (existsSync(link)) continue;
        mkdirSync(linked, { recursive: true });
        // A junction on Windows, where a directory symlink needs privileges; ignored elsewhere.
        symlinkSync(join(installed, name), link, 'junction');
      }
    }
  }
}

/** `relative` in `directory` or the nearest of its ancestors, as Node looks for packages. */
function nearest(directory: string, relative: string): string | undefined {
  for (let current = directory; ; current = dirname(current)) {
    if (existsSync(join(current, relative))) return join(current, relative);
    if (dirname(current) === current) return undefined;
  }
}

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The file of one of the package's own Lambda handlers (the publisher's, the monitor's), for
 * NodejsFunction to bundle: the compiled `.js` beside this module in the installed package, or the
 * `.ts` source when the construct itself runs from source (this repository's tests).
 */
export function packageEntry(relativeToConstructs: string): string {
  for (const extension of ['.js', '.ts']) {
    const file = fileURLToPath(new URL(`${relativeToConstructs}${extension}`, import.meta.url));
    if (existsSync(file)) return file;
  }
  throw new Error(`Oncely's ${relativeToConstructs} handler is missing from the package: reinstall oncely.`);
}

import { createHash } from 'node:crypto';
import { existsSync, renameSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { inject } from 'vitest';
import { synthesizeApp } from '../../sandbox/synthesize.js';

/**
 * The cloud assembly of the CDK app in `appDirectory` with `context`, synthesised once for the whole
 * run (bundling included, about 12 s) and shared by every test file that starts a sandbox of it:
 * give it to startSandbox as `cloudAssembly`. The sources do not change during a run, so neither
 * does the assembly; the global setup removes them all at the end.
 */
export async function sharedAssembly(
  appDirectory: string,
  context: Record<string, unknown> = {},
): Promise<string> {
  const key = createHash('sha256')
    .update(JSON.stringify([resolve(appDirectory), Object.entries(context).sort()]))
    .digest('hex')
    .slice(0, 16);
  const directory = join(inject('assemblyCache'), key);
  if (existsSync(join(directory, 'manifest.json'))) return directory;
  const assembly = await synthesizeApp({ appDirectory, context });
  try {
    // Into place whole, so that a file running beside this one finds a complete assembly or none.
    renameSync(assembly.directory, directory);
  } catch (error) {
    assembly.remove();
    if (!existsSync(join(directory, 'manifest.json'))) throw error;
  }
  return directory;
}

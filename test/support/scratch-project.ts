import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import packageJson from '../../package.json' with { type: 'json' };

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '..', '..');
const versions = { ...packageJson.dependencies, ...packageJson.devDependencies } as Record<string, string>;

/** A user's CDK app, outside the repository, with Oncely installed from the packed tarball. */
export interface ScratchProject {
  readonly directory: string;
  readonly tarball: string;
}

/**
 * Packs the package (dist/ as `npm test` or `npm run build` left it) and installs the tarball into
 * a new directory with `files`, beside the peer dependencies and tools a user's CDK app has, in
 * the versions this repository uses.
 */
export async function createScratchProject(files: Record<string, string>): Promise<ScratchProject> {
  const directory = mkdtempSync(join(tmpdir(), 'oncely-user-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(directory, file, '..'), { recursive: true });
    writeFileSync(join(directory, file), text);
  }
  // Without scripts, packing leaves dist/ in place for the other suites.
  const pack = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', directory, '--silent'], {
    cwd: REPO,
    maxBuffer: 1 << 24,
  });
  const tarball = join(directory, pack.stdout.trim().split('\n').at(-1) as string);
  if (!existsSync(tarball)) throw new Error(`npm pack wrote no tarball: ${pack.stdout}`);
  const pinned = (names: string[]) => names.map((name) => `${name}@${versions[name]}`);
  const npm = (args: string[]) =>
    run('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: directory,
      maxBuffer: 1 << 24,
    });
  await npm(['install', tarball, ...pinned(['aws-cdk-lib', 'constructs', '@middy/core', 'zod'])]);
  await npm([
    'install',
    '--save-dev',
    ...pinned(['aws-cdk', 'typescript', 'tsx', '@types/node', '@types/aws-lambda']),
  ]);
  return { directory, tarball };
}

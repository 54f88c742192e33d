import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '..', '..');

/** A user's project, outside the repository, with Oncely installed from the packed tarball. */
export interface ScratchProject {
  readonly directory: string;
  readonly tarball: string;
}

/** A new directory outside the repository holding `files`. */
export function scratchDirectory(files: Record<string, string>): string {
  const directory = mkdtempSync(join(tmpdir(), 'oncely-user-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(directory, file, '..'), { recursive: true });
    writeFileSync(join(directory, file), text);
  }
  return directory;
}

/** Packs the package (dist/ as `npm test` or `npm run build` left it) into `destination`. */
export async function packOncely(destination: string): Promise<string> {
  // Without scripts, packing leaves dist/ in place for the other suites.
  const pack = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', destination, '--silent'], {
    cwd: REPO,
    maxBuffer: 1 << 24,
  });
  const tarball = join(destination, pack.stdout.trim().split('\n').at(-1) as string);
  if (!existsSync(tarball)) throw new Error(`npm pack wrote no tarball: ${pack.stdout}`);
  return tarball;
}

/** Runs npm in `directory`, from the local cache where it can. */
export function npm(directory: string, args: string[]) {
  return run('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: directory,
    maxBuffer: 1 << 24,
  });
}

/**
 * The `npm install` lines of README.md's "Use it in your project", in order, split into arguments:
 * what a user types, with `oncely` standing for the package.
 */
export function readmeInstallCommands(): string[][] {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Use it in your project\n');
  const end = readme.indexOf('\n## ', start + 1);
  const commands = readme
    .slice(start, end)
    .split('\n')
    .filter((line) => line.startsWith('npm install '))
    .map((line) => (line.split(' # ')[0] as string).trim().split(/\s+/).slice(1));
  if (commands.length === 0) throw new Error("README.md's Use it in your project has no npm install line");
  return commands;
}

/**
 * Installs as README.md says, into `directory`: every `npm install` line of its "Use it in your
 * project", with `oncely` replaced by the tarball and each package of `versions` by that version.
 */
export async function installAsReadme(
  directory: string,
  tarball: string,
  versions: Readonly<Record<string, string>> = {},
): Promise<void> {
  for (const command of readmeInstallCommands()) {
    const args = command.map((arg) => {
      if (arg === 'oncely') return tarball;
      const version = versions[arg.replace(/(.)@.*$/, '$1')];
      return version === undefined ? arg : `${arg.replace(/(.)@.*$/, '$1')}@${version}`;
    });
    await npm(directory, args);
  }
}

/**
 * A user's CDK app with `files`, Oncely from the packed tarball and everything else installed as
 * README.md says, each package of `versions` pinned (exactly: the project saves exact versions).
 */
export async function createScratchProject(
  files: Record<string, string>,
  versions: Readonly<Record<string, string>> = {},
): Promise<ScratchProject> {
  const directory = scratchDirectory({ ...files, '.npmrc': 'save-exact=true\n' });
  const tarball = await packOncely(directory);
  await installAsReadme(directory, tarball, versions);
  return { directory, tarball };
}

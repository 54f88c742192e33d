import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '..');

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

/** One `npm install` line of README.md: the heading it is under, and npm's arguments. */
export interface ReadmeInstall {
  readonly section: string;
  readonly args: string[];
}

/**
 * The `npm install` lines of README.md's "Use it in your project", in order, as a user runs them:
 * `oncely` replaced by `tarball`, each package of `versions` given that version.
 */
export function readmeInstallCommands(
  tarball: string,
  versions: Readonly<Record<string, string>> = {},
): ReadmeInstall[] {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Use it in your project\n');
  const end = readme.indexOf('\n## ', start + 1);
  const commands: ReadmeInstall[] = [];
  let section = '';
  for (const line of readme.slice(start, end).split('\n')) {
    if (line.startsWith('### ')) section = line.slice(4);
    if (!line.startsWith('npm install ')) continue;
    const words = (line.split(' # ')[0] as string).trim().split(/\s+/).slice(1);
    commands.push({ section, args: words.map((word) => pinned(word, tarball, versions)) });
  }
  if (commands.length === 0) throw new Error("README.md's Use it in your project has no npm install line");
  return commands;
}

/** `word` of an npm command line, `oncely` being the tarball and a package of `versions` pinned. */
function pinned(word: string, tarball: string, versions: Readonly<Record<string, string>>): string {
  if (word === 'oncely') return tarball;
  // A scoped name starts with @: the version, if any, follows the second one.
  const name = word.replace(/(.)@.*$/, '$1');
  const version = versions[name];
  return version === undefined ? word : `${name}@${version}`;
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
  for (const { args } of readmeInstallCommands(tarball, versions)) await npm(directory, args);
  return { directory, tarball };
}

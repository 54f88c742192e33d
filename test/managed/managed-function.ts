import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { lambdaBuildOptions, writeLambdaAssetPackageJson } from '../../lib/constructs/bundling.js';
import { LocalFunctionRuntime } from '../../sandbox/function-runtime.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Where a test's bundles go; removed by {@link removeBundles}. */
export async function bundlesDirectory(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'oncely-managed-'));
}

export async function removeBundles(directory: string | undefined): Promise<void> {
  if (directory) await rm(directory, { recursive: true, force: true });
}

/**
 * Bundles a handler module exactly as the stack bundles its Lambdas (lib/constructs/bundling.ts:
 * `index.mjs`, the AWS SDK inside, the asset's `package.json` beside it): what the sandbox runs.
 */
export async function bundleHandler(entry: string, directory: string, folder: string): Promise<string> {
  const outdir = join(directory, folder);
  await mkdir(outdir, { recursive: true });
  await build({ ...lambdaBuildOptions({ projectRoot: PROJECT_ROOT, entry, outdir }), logLevel: 'error' });
  await writeLambdaAssetPackageJson(outdir);
  return outdir;
}

/** Credentials and endpoints the bundled SDK finds the emulators by, as it would find AWS. */
export function emulatorEnvironment(endpoints: { dynamodb: string; sqs: string }): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_REGION: LOCAL_REGION,
  };
}

/** A bundled function run as on Lambda Managed Instances, and every line it wrote. */
export interface ManagedFunction {
  runtime: LocalFunctionRuntime;
  lines: string[];
  /** The JSON lines it wrote (Powertools' logs and EMF metrics), in order. */
  json(): Record<string, unknown>[];
  /** Its EMF documents (Powertools' `publishStoredMetrics`), in order: each the metrics' values by name. */
  metrics(): Record<string, unknown>[];
}

export function managedFunction(options: {
  name: string;
  codeDirectory: string;
  environment: Record<string, string>;
  maxConcurrency?: number;
  timeoutSeconds?: number;
}): ManagedFunction {
  const lines: string[] = [];
  const runtime = new LocalFunctionRuntime(
    {
      name: options.name,
      arn: `arn:aws:lambda:${LOCAL_REGION}:000000000000:function:${options.name}`,
      codeDirectory: options.codeDirectory,
      handler: 'index.handler',
      runtime: 'nodejs24.x',
      timeoutSeconds: options.timeoutSeconds ?? 30,
      environment: options.environment,
      perExecutionEnvironmentMaxConcurrency: options.maxConcurrency ?? 2,
    },
    (line) => lines.push(line),
  );
  const json = () =>
    lines.flatMap((line) => {
      try {
        const parsed: unknown = JSON.parse(line);
        return typeof parsed === 'object' && parsed !== null ? [parsed as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
  const metrics = () =>
    json()
      .filter((document) => '_aws' in document)
      .map((document) => {
        const names = (
          document._aws as { CloudWatchMetrics: { Metrics: { Name: string }[] }[] }
        ).CloudWatchMetrics.flatMap((directive) => directive.Metrics.map((metric) => metric.Name));
        return Object.fromEntries(names.map((name) => [name, document[name]]));
      });
  return { runtime, lines, json, metrics };
}

/** Waits for `condition` to hold, polling, for at most `timeoutMs`: no sleep decides a race. */
export async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A stand-in HTTP gateway that holds the requests `holds` picks until the test answers them, and accepts the rest. */
export interface HoldingGateway {
  url: string;
  /** The `Idempotency-Key` of every request received, in order. */
  keys: (string | undefined)[];
  /** The held requests' responses, for the test to answer. */
  hung: ServerResponse[];
  close(): Promise<void>;
}

export async function startHoldingGateway(holds: (body: unknown) => boolean): Promise<HoldingGateway> {
  const keys: (string | undefined)[] = [];
  const hung: ServerResponse[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      keys.push(request.headers['idempotency-key'] as string | undefined);
      if (holds(JSON.parse(Buffer.concat(chunks).toString('utf8')))) hung.push(response);
      else response.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/send`,
    keys,
    hung,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import { build } from 'esbuild';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CONSUMER_ENVIRONMENT } from '../../lambdas/consumer/environment.js';
import { DLQ_ATTRIBUTES } from '../../lambdas/consumer/index.js';
import { recordId } from '../../lambdas/idempotency/keys.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { SHOP_ENVIRONMENT } from '../../lambdas/shop/consumer/environment.js';
import { NOTIFICATIONS_NAMESPACE } from '../../lambdas/shop/consumer/notifications.js';
import {
  lambdaBuildOptions,
  lambdaBundleFile,
  lambdaBundling,
  writeLambdaAssetPackageJson,
} from '../../lib/constructs/bundling.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import {
  createQueueWithDlq,
  deleteQueues,
  type FifoQueue,
  localSqsClient,
  publish,
  receiveMessages,
} from '../support/sqs.js';
import { pollOnce, type SqsBatchHandler } from '../support/sqs-event-source.js';

/**
 * The consumers bundled exactly as the stack bundles its Lambdas (lib/constructs/bundling.ts: a minified ES module
 * with the AWS SDK inside, names kept), then run from the bundle against the emulators: the error names the DLQ and the
 * idempotency records show must be the classes' names, not the one-letter names of the minifier.
 */
const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLE_CONSUMER = 'lambdas/shop/consumer/handler.ts';
const STANDARD_EXAMPLE_CONSUMER = 'lambdas/shop/consumer/standard-handler.ts';
const USER_CONSUMER = 'test/fixtures/user-error-consumer.ts';

let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let workDir: string;
/** Where the bundles go: see beforeAll. */
let bundlesDir: string;
let idempotencyTable: string;
let ledgerTable: string;
const queues: FifoQueue[] = [];

interface Bundle {
  /** The bundle's file (`index.mjs`). */
  file: string;
  code: string;
}
let example: Bundle;
let user: Bundle;

/** Bundles `entry` with the stack's options into its own folder of {@link bundlesDir}; returns the code. */
async function bundle(entry: string, folder: string): Promise<Bundle> {
  const outdir = join(bundlesDir, folder);
  await build({ ...lambdaBuildOptions({ projectRoot: PROJECT_ROOT, entry, outdir }), logLevel: 'error' });
  await writeLambdaAssetPackageJson(outdir);
  const file = join(outdir, lambdaBundleFile());
  return { file, code: await readFile(file, 'utf8') };
}

/** A queue and its DLQ, and the environment the stack gives a consumer: the construct's and the shop's. */
async function consumerEnvironment(): Promise<{ queue: FifoQueue; dlq: FifoQueue }> {
  const { queue, dlq } = await createQueueWithDlq(sqs, { visibilityTimeoutSeconds: 3, maxReceiveCount: 5 });
  queues.push(queue, dlq);
  const environment: Record<string, string | undefined> = {
    [CONSUMER_ENVIRONMENT.idempotencyTableName]: idempotencyTable,
    [CONSUMER_ENVIRONMENT.dlqUrl]: dlq.url,
    [CONSUMER_ENVIRONMENT.queueUrl]: queue.url,
    [SHOP_ENVIRONMENT.ledgerTableName]: ledgerTable,
    // Never reached: the notification below is refused for its payload before it is sent.
    [SHOP_ENVIRONMENT.notificationUrl]: 'http://127.0.0.1:9/unused',
    // The SDK inside the bundle finds the emulators as it would find AWS.
    AWS_ENDPOINT_URL_DYNAMODB: emulatorEndpoint('dynamodbEndpoint'),
    AWS_ENDPOINT_URL_SQS: emulatorEndpoint('sqsEndpoint'),
    AWS_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_SESSION_TOKEN: undefined,
    AWS_PROFILE: undefined,
    POWERTOOLS_SERVICE_NAME: 'bundled-consumer-test',
    POWERTOOLS_METRICS_NAMESPACE: 'OncelyTest',
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  };
  for (const [name, value] of Object.entries(environment)) vi.stubEnv(name, value);
  return { queue, dlq };
}

/** Loads a bundle as Lambda's Node runtime loads an `index.mjs`: `import()`, a fresh module per file. */
async function importHandler(file: string): Promise<SqsBatchHandler> {
  const bundled = (await import(/* @vite-ignore */ pathToFileURL(file).href)) as { handler: SqsBatchHandler };
  return bundled.handler;
}

/** `ErrorName` of each DLQ message, by the id of the message it was sent for. */
function errorNamesByOriginalId(messages: Message[]): Record<string, string | undefined> {
  return Object.fromEntries(
    messages.map((message) => [
      message.MessageAttributes?.[DLQ_ATTRIBUTES.originalMessageId]?.StringValue,
      message.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue,
    ]),
  );
}

beforeAll(async () => {
  dynamodb = localDynamoClient();
  sqs = localSqsClient();
  workDir = await mkdtemp(join(tmpdir(), 'oncely-bundled-consumer-'));
  // Lambda's Node runtime imports the bundle with its own loader and provides the AWS SDK the bundle
  // leaves external. Here the bundles go in a node_modules folder, which Vitest leaves to Node's
  // loader instead of transforming what it imports, beside a link to the project's `@aws-sdk`.
  bundlesDir = join(workDir, 'node_modules');
  await mkdir(bundlesDir);
  await symlink(join(PROJECT_ROOT, 'node_modules', '@aws-sdk'), join(bundlesDir, '@aws-sdk'), 'dir');
  [idempotencyTable, ledgerTable, example, user] = await Promise.all([
    createTable(dynamodb, 'bundled-idem'),
    createTable(dynamodb, 'bundled-ledger'),
    bundle(EXAMPLE_CONSUMER, 'example-consumer'),
    bundle(USER_CONSUMER, 'user-consumer'),
  ]);
});

afterEach(() => {
  vi.unstubAllEnvs();
});

afterAll(async () => {
  if (sqs) await deleteQueues(sqs, queues);
  sqs?.destroy();
  dynamodb?.destroy();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('a consumer bundled as the stack bundles it', () => {
  it('is minified: internal identifiers and class bindings are renamed', async () => {
    // Module-level constants of the consumer runtime: a build that does not minify keeps them.
    const internal = {
      'lambdas/consumer/dead-letter-queue.ts': 'MAX_ERROR_MESSAGE_LENGTH',
      'lambdas/consumer/deadline.ts': 'RECENT_RECORDS',
    };
    for (const [source, identifier] of Object.entries(internal)) {
      expect(await readFile(join(PROJECT_ROOT, source), 'utf8')).toContain(`const ${identifier} =`);
      expect(example.code).not.toContain(identifier);
    }
    expect(example.code).not.toMatch(/class (UnknownMessageTypeError|InvalidPayloadError)\b/);
    expect(example.code.split('\n').length).toBeLessThan(100);
  });

  it('carries only the middleware its entry uses: FIFO’s or the standard queue’s', async () => {
    // Each middleware's module makes its consumer cache at module scope: unmarked as pure, that
    // call kept standardBatch's consumer in every FIFO bundle (and fifoBatch's in every standard one).
    const standard = await bundle(STANDARD_EXAMPLE_CONSUMER, 'example-standard-consumer');
    // Names are kept (keepNames), so a consumer class in the bundle shows by its name.
    const consumers = (code: string) =>
      ['FifoBatchConsumer', 'StandardBatchConsumer'].filter((name) => code.includes(name));
    expect(consumers(example.code)).toEqual(['FifoBatchConsumer']);
    expect(consumers(standard.code)).toEqual(['StandardBatchConsumer']);
  });

  it("sends Oncely's own rejections to the DLQ under their class names", async () => {
    const { queue, dlq } = await consumerEnvironment();
    const handler = await importHandler(example.file);
    const unknownTypeId = await publish(sqs, queue.url, {
      type: 'GiftCardIssued',
      groupId: 'customer-1',
      payload: { amount: 10 },
    });
    const invalidPayload = { type: 'SendNotification', groupId: 'customer-2', key: 'mail-1' };
    const invalidPayloadId = await publish(sqs, queue.url, {
      ...invalidPayload,
      payload: { to: 'not an address', subject: '' },
    });

    const poll = await pollOnce(sqs, queue, handler);

    expect(poll.error).toBeUndefined();
    expect(poll.records).toHaveLength(2);
    expect(poll.response).toEqual({ batchItemFailures: [] });
    expect(errorNamesByOriginalId(await receiveMessages(sqs, dlq.url, 2))).toEqual({
      [unknownTypeId]: 'UnknownMessageTypeError',
      [invalidPayloadId]: 'InvalidPayloadError',
    });
    const record = await readItem<IdempotencyRecord>(
      idempotencyTable,
      recordId(NOTIFICATIONS_NAMESPACE, invalidPayload.key),
    );
    expect(record).toMatchObject({ status: 'REJECTED', error: { name: 'InvalidPayloadError' } });
  });

  it("keeps the class name of a user's NonRetryableError without an errorName", async () => {
    // The control: without keepNames the minifier drops the name, so this test guards the option.
    const unkept = await build({
      ...lambdaBuildOptions(
        { projectRoot: PROJECT_ROOT, entry: USER_CONSUMER, outdir: join(bundlesDir, 'unkept') },
        lambdaBundling({ keepNames: false }),
      ),
      write: false,
      logLevel: 'error',
    });
    const unkeptCode = unkept.outputFiles.find((file) => file.path.endsWith(lambdaBundleFile()))?.text;
    expect(unkeptCode).toBeDefined();
    expect(unkeptCode).not.toContain('PaymentDeclinedError');
    expect(user.code).not.toMatch(/class PaymentDeclinedError\b/);

    const { queue, dlq } = await consumerEnvironment();
    const handler = await importHandler(user.file);
    const messageId = await publish(sqs, queue.url, {
      type: 'CapturePayment',
      groupId: 'customer-3',
      key: 'payment-1',
      payload: { amount: 25 },
    });

    const poll = await pollOnce(sqs, queue, handler);

    expect(poll.error).toBeUndefined();
    expect(poll.response).toEqual({ batchItemFailures: [] });
    expect(errorNamesByOriginalId(await receiveMessages(sqs, dlq.url, 1))).toEqual({
      [messageId]: 'PaymentDeclinedError',
    });
    const record = await readItem<IdempotencyRecord>(idempotencyTable, recordId('payments', 'payment-1'));
    expect(record).toMatchObject({ status: 'REJECTED', error: { name: 'PaymentDeclinedError' } });
  });
});

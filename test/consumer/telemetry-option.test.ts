import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { CONSUMER_READY_MESSAGE } from '../../lambdas/consumer/consumer-setup.js';
import {
  CONSUMER_METRICS,
  type FifoBatchOptions,
  fifoBatch,
  leaseOperation,
  processFifoBatch,
} from '../../lambdas/consumer/index.js';
import { IdempotencyConfigurationError } from '../../lambdas/idempotency/errors.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { createTable, localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { lambdaContext } from '../support/lambda-context.js';
import { LEASE_STORES, leaseRecords } from '../support/lease-stores.js';
import { deadLetters, eventRecord } from '../support/sqs.js';

// `telemetry: 'off'`: the consumer makes no Powertools Logger or Metrics, and loads no Powertools
// module at all; by default it makes them for what its options leave unset, as before.

const ROOT = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);

/** The table of the consumer made from the environment (its default store is DynamoDB's). */
let dynamodb: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  dynamodb = localDynamoClient();
  tableName = await createTable(dynamodb, 'telemetry-option');
});

afterAll(() => {
  dynamodb.destroy();
});

beforeEach(() => {
  vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'telemetry-consumer');
  vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'oncely-test');
});

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

/** A batch of one record to run and one of a type without an operation, which goes to the DLQ. */
const record = (type: string, name: string) => eventRecord(type, { name });

function batch(): SQSEvent {
  return { Records: [record('Named', 'A1'), record('NoSuchType', 'B1')] };
}

/** Options with everything but telemetry given, and an operation that notes what it ran. */
function consumerOptions(store: LeaseStore, more: Partial<FifoBatchOptions>) {
  const ran: string[] = [];
  const dlq = deadLetters();
  const options: FifoBatchOptions = {
    operations: {
      Named: leaseOperation<{ name: string }>({
        namespace: `telemetry-${randomUUID().slice(0, 8)}`,
        mode: 'at-least-once',
        run: ({ payload }) => {
          ran.push(payload.name);
        },
      }),
    },
    store,
    deadLetterQueue: { client: dlq.client, queueUrl: 'https://sqs.local/dlq.fifo' },
    ...more,
  };
  return { ran, dlq, options };
}

/** Every line written to stdout and stderr (a function's CloudWatch logs), instead of printing it. */
function captureOutput(): string[] {
  const lines: string[] = [];
  for (const stream of [process.stdout, process.stderr]) {
    vi.spyOn(stream, 'write').mockImplementation(((chunk: unknown) => {
      lines.push(...String(chunk).trim().split('\n'));
      return true;
    }) as typeof stream.write);
  }
  return lines;
}

describe.each(LEASE_STORES)("fifoBatch's telemetry option (records in %s)", (storeName) => {
  const records = leaseRecords(storeName);

  it("'off': the batch is processed and dead-lettered as ever, with nothing logged or counted", async () => {
    const { ran, dlq, options } = consumerOptions(records.store(), { telemetry: 'off' });
    const output = captureOutput();

    const response = await processFifoBatch(batch(), lambdaContext(), options);
    vi.restoreAllMocks();
    expect(response.batchItemFailures).toEqual([]);
    expect(ran).toEqual(['A1']);
    expect(dlq.sent).toHaveLength(1);
    expect(output).toEqual([]);
  });

  it('by default makes what the options leave unset: with a logger passed, only Metrics, which it publishes', async () => {
    const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
    const logger = Object.fromEntries(
      (['debug', 'info', 'warn', 'error'] as const).map((level) => [
        level,
        (message: string, fields?: Record<string, unknown>) =>
          logged.push({ level, message, ...(message === CONSUMER_READY_MESSAGE && { fields }) }),
      ]),
    ) as unknown as FifoBatchOptions['logger'];
    const { ran, options } = consumerOptions(records.store(), { logger });
    const output = captureOutput();

    await processFifoBatch(batch(), lambdaContext(), options);
    vi.restoreAllMocks();
    expect(ran).toEqual(['A1']);
    expect(logged).toContainEqual(expect.objectContaining({ level: 'warn' }));
    // Its first batch says which types it handles; the next does not say it again.
    const ready = (line: { message: string }) => line.message === CONSUMER_READY_MESSAGE;
    expect(logged.filter(ready)).toEqual([
      {
        level: 'info',
        message: CONSUMER_READY_MESSAGE,
        fields: { messageTypes: Object.keys(options.operations) },
      },
    ]);
    await processFifoBatch(batch(), lambdaContext(), options);
    expect(logged.filter(ready)).toHaveLength(1);
    const emf = output.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
    expect(emf).toMatchObject([
      {
        _aws: { CloudWatchMetrics: [{ Namespace: 'oncely-test' }] },
        [CONSUMER_METRICS.processed]: 1,
        [CONSUMER_METRICS.sentToDlq]: 1,
      },
    ]);
  });
});

describe("fifoBatch's telemetry option, checked", () => {
  it('refuses a value it does not know, when the consumer is made', () => {
    // Refused before its store is used: any store will do.
    const store = new DynamoDBIdempotencyStore({ client: dynamodb, tableName });
    const { options } = consumerOptions(store, { telemetry: 'on' as FifoBatchOptions['telemetry'] });
    expect(() => fifoBatch(options)).toThrow(IdempotencyConfigurationError);
    expect(() => fifoBatch(options)).toThrow("telemetry must be 'powertools' or 'off', not \"on\".");
  });
});

/**
 * A fresh Node process that imports the built `oncely/consumer` and processes one record with its
 * defaults (store and DLQ from the environment) and `telemetry` as given, under a module hook that
 * makes every import of a Powertools package fail: so Powertools is loaded if and only if the batch
 * fails with the hook's error.
 */
const CHILD = `
import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(
  "export async function resolve(specifier, context, next) {" +
  "  if (specifier.startsWith('@aws-lambda-powertools/')) throw new Error('Powertools loaded: ' + specifier);" +
  "  return next(specifier, context);" +
  "}",
));
const { leaseOperation, processFifoBatch } = await import('oncely/consumer');
const ran = [];
const ping = leaseOperation({ namespace: process.env.NAMESPACE, mode: 'at-least-once', run: ({ payload }) => { ran.push(payload.name); } });
const telemetry = process.env.TELEMETRY || undefined;
const context = { awsRequestId: 'child', getRemainingTimeInMillis: () => 30000 };
let result;
try {
  const response = await processFifoBatch(JSON.parse(process.env.EVENT), context, { operations: { Named: ping }, telemetry });
  result = { response, ran };
} catch (error) {
  result = { error: error.message };
}
process.stdout.write(JSON.stringify(result) + '\\n');
process.exit(0);
`;

async function consumeInFreshProcess(telemetry: string): Promise<{ lines: string[]; result: unknown }> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', CHILD], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      AWS_ENDPOINT_URL_DYNAMODB: emulatorEndpoint('dynamodbEndpoint'),
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      IDEMPOTENCY_TABLE_NAME: tableName,
      // Never sent to: the record has an operation.
      DLQ_URL: 'http://localhost:9/dlq.fifo',
      NAMESPACE: `fresh-${randomUUID().slice(0, 8)}`,
      EVENT: JSON.stringify({ Records: [record('Named', 'A1')] }),
      TELEMETRY: telemetry,
    },
  });
  const lines = stdout.trim().split('\n');
  return { lines, result: JSON.parse(lines.at(-1) ?? '') };
}

// The consumer's defaults: its store made from the environment, DynamoDB's (IDEMPOTENCY_TABLE_NAME).
// test/consumer/valkey-defaults.test.ts covers the Valkey store a construct's environment makes.
describe('Powertools modules in a fresh process (the built package)', () => {
  it("'off': not one is loaded, and the record is processed", async () => {
    const { lines, result } = await consumeInFreshProcess('off');
    expect(result).toEqual({ response: { batchItemFailures: [] }, ran: ['A1'] });
    expect(lines).toHaveLength(1);
  });

  it('by default they are imported when the consumer is made: the hook fails that import, and so the batch', async () => {
    const { result } = await consumeInFreshProcess('');
    expect(result).toEqual({
      error: expect.stringMatching(/^Powertools loaded: @aws-lambda-powertools\/(logger|metrics)$/),
    });
  });
});

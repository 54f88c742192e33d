import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { Cluster } from 'iovalkey';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { type OperationsCommand, parseCommandLine } from '../../cli/command-line.js';
import { runConsole } from '../../cli/console-command.js';
import { TOKEN_HEADER } from '../../cli/console-server.js';
import type { MessageHistory } from '../../cli/history-story.js';
import type { UnresolvedPage } from '../../cli/in-doubt-records.js';
import { runOperation } from '../../cli/operations-command.js';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import { CONSUMER_ENVIRONMENT, SERVERLESS_KEY_PREFIX } from '../../lambdas/consumer/environment.js';
import { payloadHash } from '../../lambdas/idempotency/keys.js';
import { ValkeyIdempotencyStore } from '../../lambdas/idempotency/valkey-store.js';
import { VALKEY_ACCESS_STRING } from '../../lib/constructs/valkey-lease-cache.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';
import { LocalServerlessCaches, ValkeyServerMissingError } from '../../sandbox/serverless-cache.js';
import { parkInDoubt } from '../support/lease-stores.js';
import { groupAlive } from '../support/process-group.js';

// Issue 46, part 4: an app whose OncelyPipeline keeps its lease records in Valkey
// (fixtures/apps/valkey-leases, `leaseRecords: 'valkey'`) run by the sandbox: the serverless cache
// on a local redis-server (one cluster node, TLS, the template's user), the consumer's bundle the
// deployed one (iovalkey's cluster client, TLS checked, an IAM token as password).

/** The package's `oncely` command as `npm run build` leaves it. */
const ONCELY_COMMAND = fileURLToPath(new URL('../../dist/bin/oncely.js', import.meta.url));

let sandbox: Sandbox;
let documents: DynamoDBDocumentClient;
let sqs: SQSClient;
let valkey: Cluster;
let directory: string;
/** The sandbox's ready file, as `oncely local --ready-file` writes it. */
let readyFile: string;
/** What the functions wrote: the hooks' lines, and shown when a test fails. */
const output: string[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({
    appDirectory: 'test/sandbox/fixtures/apps/valkey-leases',
    functionOutput: (line, functionName) => output.push(`${functionName}: ${line}`),
  });
  const { endpoints, caches = [] } = sandbox.description;
  documents = DynamoDBDocumentClient.from(new DynamoDBClient(localAwsConfig(endpoints.dynamodb)));
  sqs = new SQSClient(localAwsConfig(endpoints.sqs));
  directory = mkdtempSync(join(tmpdir(), 'oncely-valkey-cli-'));
  readyFile = join(directory, 'ready.json');
  writeFileSync(readyFile, JSON.stringify(sandbox.description));
  const [host, port] = caches[0].endpoint.split(':');
  // As the consumer connects: the cache's user, any password (the sandbox checks no IAM token).
  valkey = new Cluster([{ host, port: Number(port) }], {
    dnsLookup: (address, callback) => callback(null, address),
    redisOptions: {
      username: consumerEnvironment()[CONSUMER_ENVIRONMENT.valkeyUserId],
      password: 'not-an-iam-token',
      tls: { ca: readFileSync(caches[0].caCertificateFile) },
    },
  });
}, 240_000);

afterAll(async () => {
  valkey?.disconnect();
  documents?.destroy();
  sqs?.destroy();
  await sandbox?.stop();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

function consumerEnvironment(): Record<string, string> {
  const { consumerFunctionName } = sandbox.pipelineResources();
  const consumer = sandbox.provisioned.functions.find((fn) => fn.name === consumerFunctionName);
  if (!consumer) throw new Error(`no local function ${consumerFunctionName}`);
  return consumer.environment;
}

/** Runs `oncely ARGS --ready-file …` in-process, as the command does (resolve with --yes); returns what it printed. */
async function oncely(...args: string[]): Promise<string> {
  const yes = args[1] === 'resolve' ? ['--yes'] : [];
  const command = parseCommandLine([...args, ...yes, '--ready-file', readyFile], {}) as OperationsCommand;
  const printed: string[] = [];
  expect(await runOperation(command, { print: (text) => printed.push(text) })).toBe(0);
  return printed.join('\n');
}

/** The package's `oncely` command as `npm run build` leaves it, run in a child process with `env`. */
function runBin(
  env: NodeJS.ProcessEnv,
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [ONCELY_COMMAND, ...args], { env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Each key's count of runs, by key. */
async function runs(): Promise<Record<string, number>> {
  const { Items = [] } = await documents.send(
    new ScanCommand({ TableName: sandbox.description.outputs.RunsTableName, ConsistentRead: true }),
  );
  return Object.fromEntries(Items.map((item) => [item.id as string, Number(item.runs)]));
}

async function publish(key: string): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: sandbox.pipelineResources().queueUrl,
      MessageBody: JSON.stringify(
        createEnvelope({ type: 'Signup', groupId: 'signups', key, payload: { key } }),
      ),
      MessageGroupId: 'signups',
      // A new message each time, as a producer's retry past the deduplication window is.
      MessageDeduplicationId: randomUUID(),
    }),
  );
}

const keysIn = (word: string) =>
  output.flatMap((line) => line.match(new RegExp(`: ${word} (\\S+)$`))?.slice(1) ?? []);

describe("an app with leaseRecords: 'valkey' in the sandbox", () => {
  it('runs the cache on a local server the consumer’s variables name; the network and users are not emulated', () => {
    const [cache] = sandbox.description.caches ?? [];
    expect(cache).toMatchObject({
      stackName: 'ValkeyLeases',
      endpoint: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
    });
    const environment = consumerEnvironment();
    expect(environment[CONSUMER_ENVIRONMENT.valkeyEndpoint]).toBe(cache.endpoint);
    expect(environment[CONSUMER_ENVIRONMENT.valkeyCacheName]).toBe(cache.name);
    const notEmulated = new Set(sandbox.description.notEmulated.map(({ type }) => type));
    expect(notEmulated).not.toContain('AWS::ElastiCache::ServerlessCache');
    for (const type of [
      'AWS::ElastiCache::User',
      'AWS::ElastiCache::UserGroup',
      'AWS::EC2::VPC',
      'AWS::EC2::SecurityGroup',
      'AWS::EC2::VPCEndpoint',
    ]) {
      expect(notEmulated).toContain(type);
    }
  });

  it('keeps the consumer’s lease records in Valkey, not in DynamoDB, and answers a duplicate from them', async () => {
    onTestFailed(() => console.error(`The functions wrote:\n${output.join('\n')}`));
    const keys = ['ada', 'grace', 'edsger'];
    for (const key of keys) await publish(key);
    await expect
      .poll(async () => Object.keys(await runs()).length, { timeout: 60_000, interval: 250 })
      .toBe(keys.length);

    for (const key of keys) {
      const record = JSON.parse((await valkey.get(`{oncely}:signup#${key}`)) ?? 'null');
      expect(record).toMatchObject({ id: `signup#${key}`, status: 'COMPLETED' });
    }
    const { Items = [] } = await documents.send(
      new ScanCommand({ TableName: sandbox.pipelineResources().idempotencyTableName, ConsistentRead: true }),
    );
    expect(Items.filter((item) => String(item.id).startsWith('signup#'))).toEqual([]);

    // A new message with a key already done: its run is skipped, from the record in Valkey (the
    // consumer keeps no cache of completed keys).
    await publish('ada');
    await expect.poll(() => keysIn('DUPLICATE'), { timeout: 60_000, interval: 250 }).toEqual(['ada']);
    await expect.poll(() => messagesInQueue(sqs, sandbox.pipelineResources().queueUrl)).toBe(0);
    expect(await runs()).toEqual({ ada: 1, grace: 1, edsger: 1 });
    expect(keysIn('COMPLETED').sort()).toEqual([...keys].sort());
  }, 120_000);

  it('gives the cache’s user the template’s access string: its own keys only', async () => {
    expect(VALKEY_ACCESS_STRING).toContain('~{oncely}:*');
    await expect(valkey.set('{oncely}:probe', '1')).resolves.toBe('OK');
    await expect(valkey.set('elsewhere', '1')).rejects.toThrow(/NOPERM/);
  });

  it("has its monitor count the cache's unresolved records, through the deployed bundle", async () => {
    const monitor = sandbox.provisioned.functions.find((fn) => fn.logicalId.includes('Monitor'));
    if (!monitor) throw new Error('no local monitor');
    expect(await sandbox.invoke(monitor.name, {})).toEqual({
      ok: true,
      result: { inDoubt: 0, retryPending: 0 },
    });
    // An at-most-once effect whose outcome is unknown, parked by the consumer's store on the cache.
    const store = new ValkeyIdempotencyStore({ client: valkey, keyPrefix: SERVERLESS_KEY_PREFIX });
    await parkInDoubt(store, `signup#unknown-${randomUUID()}`);
    expect(await sandbox.invoke(monitor.name, {})).toEqual({
      ok: true,
      result: { inDoubt: 1, retryPending: 0 },
    });
  }, 60_000);

  it('lets `oncely in-doubt` list and resolve the cache’s records, and `oncely history` tell their story', async () => {
    onTestFailed(() => console.error(`The functions wrote:\n${output.join('\n')}`));
    // A record parked IN_DOUBT by the consumer's store, keeping its message, as at-most-once parks one.
    const store = new ValkeyIdempotencyStore({ client: valkey, keyPrefix: SERVERLESS_KEY_PREFIX });
    const key = `doubt-${randomUUID().slice(0, 8)}`;
    const id = `signup#${key}`;
    const body = JSON.stringify(
      createEnvelope({ type: 'Signup', groupId: 'signups', key, payload: { key } }),
    );
    await parkInDoubt(store, id, {
      payloadHash: payloadHash({ type: 'Signup', payload: { key } }),
      message: { body, groupId: 'signups' },
    });

    const listed = JSON.parse(await oncely('in-doubt', 'list', '--json')) as UnresolvedPage;
    expect(listed.records).toContainEqual({
      id,
      status: 'IN_DOUBT',
      reason: { name: 'OutcomeUnknownError', message: 'timed out' },
      since: expect.any(String),
      attempts: 1,
      groupId: 'signups',
    });

    // --as retry: the message goes back to the queue, and the consumer runs it against the record in Valkey.
    expect(await oncely('in-doubt', 'resolve', id, '--as', 'retry')).toContain('(group signups,');
    await expect.poll(async () => (await runs())[key], { timeout: 60_000, interval: 250 }).toBe(1);
    await expect
      .poll(async () => JSON.parse((await valkey.get(`${SERVERLESS_KEY_PREFIX}${id}`)) ?? 'null')?.status)
      .toBe('COMPLETED');
    // What else is parked there (the monitor's test parked one without a message): --as completed.
    const { records: others } = JSON.parse(await oncely('in-doubt', 'list', '--json')) as UnresolvedPage;
    expect(others.map((record) => record.id)).not.toContain(id);
    for (const other of others) await oncely('in-doubt', 'resolve', other.id, '--as', 'completed');
    expect(await oncely('in-doubt', 'list')).toMatch(/^No records are IN_DOUBT or pending a retry/);

    const story = JSON.parse(await oncely('history', id, '--json')) as MessageHistory;
    expect(story.records).toEqual([expect.objectContaining({ id, status: 'COMPLETED' })]);
    expect(story.steps.map((step) => step.event)).toEqual(
      expect.arrayContaining(['resolved by an operator: retry']),
    );
  }, 120_000);

  it('on the sandbox as a stack: asks for --valkey-endpoint, and works through it with TLS checking the cache’s name', async () => {
    const { endpoints, region, stackName } = sandbox.description;
    const [cache] = sandbox.description.caches ?? [];
    const port = cache.endpoint.split(':')[1];
    const store = new ValkeyIdempotencyStore({ client: valkey, keyPrefix: SERVERLESS_KEY_PREFIX });
    const id = `signup#stack-${randomUUID().slice(0, 8)}`;
    await parkInDoubt(store, id);
    const { ONCELY_READY_FILE: _file, ONCELY_STACK_NAME: _stack, ...inherited } = process.env;
    const env = {
      ...inherited,
      AWS_ENDPOINT_URL: endpoints.edge,
      AWS_REGION: region,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      // The sandbox's cache presents its own certificate, as a deployed one presents Amazon's.
      NODE_EXTRA_CA_CERTS: cache.caCertificateFile,
    };

    const refused = await runBin(env, 'in-doubt', 'list', '--stack', stackName);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(
      new RegExp(
        `^ValkeyEndpointRequiredError: Stack ${stackName} keeps its lease records in Valkey: .*` +
          `at ${cache.endpoint.replace(/\./g, '\\.')}, inside the stack's VPC.*--valkey-endpoint HOST:PORT`,
      ),
    );

    // "localhost", not the 127.0.0.1 the outputs name: a tunnel's end, while TLS checks the cache's name.
    const tunnel = ['--valkey-endpoint', `localhost:${port}`];
    const listed = await runBin(env, 'in-doubt', 'list', '--stack', stackName, ...tunnel, '--json');
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect((JSON.parse(listed.stdout) as UnresolvedPage).records).toEqual([
      expect.objectContaining({ id, status: 'IN_DOUBT' }),
    ]);
    const resolved = await runBin(
      env,
      'in-doubt',
      'resolve',
      id,
      '--as',
      'completed',
      '--yes',
      '--stack',
      stackName,
      ...tunnel,
    );
    expect(resolved).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse((await valkey.get(`${SERVERLESS_KEY_PREFIX}${id}`)) ?? 'null')).toMatchObject({
      status: 'COMPLETED',
    });
    const listedAgain = await runBin(env, 'in-doubt', 'list', '--stack', stackName, ...tunnel, '--json');
    expect(JSON.parse(listedAgain.stdout)).toEqual({ records: [] });

    // iovalkey is an optional peer: without it, the cache's commands say what to install.
    // A module hook that resolves every import but iovalkey's, registered before the command starts.
    writeFileSync(
      join(directory, 'no-iovalkey-hooks.mjs'),
      'export async function resolve(specifier, context, next) {\n' +
        "  if (specifier === 'iovalkey') throw new Error('Cannot find package iovalkey');\n" +
        '  return next(specifier, context);\n}\n',
    );
    const hooks = join(directory, 'no-iovalkey.mjs');
    writeFileSync(
      hooks,
      "import { register } from 'node:module';\nregister('./no-iovalkey-hooks.mjs', import.meta.url);\n",
    );
    const missing = await runBin(
      { ...env, NODE_OPTIONS: `--import=${hooks}` },
      'in-doubt',
      'list',
      '--stack',
      stackName,
      ...tunnel,
    );
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toMatch(
      /^ValkeyClientMissingError: The pipeline keeps its lease records in Valkey \(the lease records cache .*\); reading them needs the package iovalkey, which cannot be imported \(Cannot find package iovalkey\)\. Install it/,
    );
    // Commands that read no records never import it.
    const dlq = await runBin(
      { ...env, NODE_OPTIONS: `--import=${hooks}` },
      'dlq',
      'list',
      '--stack',
      stackName,
      '--json',
    );
    expect(dlq).toMatchObject({ code: 0, stderr: '' });
  }, 60_000);

  it('has `oncely console` list and resolve the cache’s records too', async () => {
    const store = new ValkeyIdempotencyStore({ client: valkey, keyPrefix: SERVERLESS_KEY_PREFIX });
    const id = `signup#console-${randomUUID().slice(0, 8)}`;
    await parkInDoubt(store, id);
    let stop: () => void = () => undefined;
    const until = new Promise<void>((resolve) => {
      stop = resolve;
    });
    let address = '';
    const command = parseCommandLine(['console', '--ready-file', readyFile], {});
    if (command.name !== 'console') throw new Error(`parsed as ${command.name}`);
    const served = runConsole(command, {
      print: (text) => {
        address = text;
      },
      until,
    });
    try {
      await expect.poll(() => address, { timeout: 30_000 }).toMatch(/#token=/);
      const [, url, token] = /(http:\S+)\/#token=([\w-]+)/.exec(address) ?? [];
      const listed = (await (await fetch(`${url}/api/in-doubt`)).json()) as UnresolvedPage;
      expect(listed.records).toEqual([expect.objectContaining({ id, status: 'IN_DOUBT' })]);
      const resolved = await fetch(`${url}/api/in-doubt/resolve`, {
        method: 'POST',
        headers: { [TOKEN_HEADER]: token, 'content-type': 'application/json' },
        body: JSON.stringify({ id, as: 'completed' }),
      });
      expect(resolved.status).toBe(200);
    } finally {
      stop();
    }
    expect(await served).toBe(0);
    expect(JSON.parse((await valkey.get(`${SERVERLESS_KEY_PREFIX}${id}`)) ?? 'null')).toMatchObject({
      status: 'COMPLETED',
    });
  }, 60_000);

  it('stops the server, its process group, with the sandbox', async () => {
    const [pid] = sandbox.cachePids.values();
    expect(groupAlive(pid)).toBe(true);
    valkey.disconnect();
    await sandbox.stop();
    expect(groupAlive(pid)).toBe(false);
  }, 60_000);
});

describe('a serverless cache without redis-server', () => {
  it('fails at start, saying what to install', async () => {
    const caches = new LocalServerlessCaches();
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      const starting = caches.start({ stackName: 'S', logicalId: 'Cache', name: 'cache', users: [] });
      await expect(starting).rejects.toThrow(ValkeyServerMissingError);
      await expect(starting).rejects.toThrow(/apt-get install redis-server/);
    } finally {
      process.env.PATH = path;
      await caches.stop();
    }
    expect(caches.started).toEqual([]);
  });
});

describe('interrupting a process that runs a serverless cache', () => {
  it('takes its redis-server down on SIGINT', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/hold-valkey-cache.ts'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
    const { pid, certificate } = JSON.parse(line) as { pid: number; certificate: string };
    try {
      expect(groupAlive(pid)).toBe(true);
      child.kill('SIGINT');
      await once(child, 'exit');
      await expect.poll(() => groupAlive(pid), { timeout: 30_000 }).toBe(false);
    } finally {
      rmSync(dirname(certificate), { recursive: true, force: true });
    }
  }, 60_000);
});

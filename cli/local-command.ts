import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join, resolve } from 'node:path';
import { PIPELINE_OUTPUTS } from '../lib/constructs/pipeline-outputs.js';
import { functionLog } from '../sandbox/function-log.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import { type SandboxDescription, startSandbox } from '../sandbox/local-sandbox.js';
import { missingTracePackages } from '../sandbox/trace-packages.js';
import { pipelineFigures } from './console-metrics.js';
import { sandboxPublisher } from './console-publish.js';
import { startConsole } from './console-server.js';
import { withLeaseRecords } from './lease-records-cache.js';
import { connectToSandboxPipeline } from './target.js';

export interface LocalOptions {
  /** The CDK app's directory (its cdk.json); the current directory by default. */
  appDirectory?: string;
  environment: Record<string, string>;
  context: Record<string, string>;
  readyFile?: string;
  /** Runs every schedule rule this often instead of its rate (`--schedule-interval`); each rule's own rate by default. */
  scheduleIntervalSeconds?: number;
  /** Waits this long before each retry of a failed asynchronous invocation (`--async-retry-delay`); Lambda's 1 and 2 minutes by default. */
  asyncRetryDelaySeconds?: number;
  /** Each FIFO receive returns one message group's messages only (`--one-group-per-receive`); `false` by default. */
  oneGroupPerReceive?: boolean;
  /** Each batch of a standard queue goes to two invocations at once, then once more (`--duplicate-deliveries`); `false` by default. */
  duplicateDeliveries?: boolean;
  /** Installs a function's missing Node.js major into `.oncely/` first (`--install-node`); `false` by default. */
  installNode?: boolean;
  /**
   * Where the functions' spans are written (`--traces-file`).
   * @default `.oncely/traces.otlp.jsonl` in the app's directory, when OpenTelemetry's SDK is installed
   */
  tracesFile?: string;
  /** Collects no spans (`--no-traces`); `false` by default. */
  noTraces?: boolean;
}

/** Where `oncely local` writes the functions' spans unless told: beside the Node.js it installs. */
export const DEFAULT_TRACES_FILE = join('.oncely', 'traces.otlp.jsonl');
/** Where `oncely local` keeps every line its functions write (emptied at start), in the app's directory. */
export const DEFAULT_LOGS_FILE = join('.oncely', 'functions.log.jsonl');

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * `oncely local`: runs the app in the sandbox until SIGINT or SIGTERM, then stops everything it
 * started and removes the ready file. A signal during the start-up stops what had started; a
 * second signal exits at once (the JVM still goes with this process).
 */
export async function runLocal(options: LocalOptions): Promise<number> {
  const appDirectory = resolve(options.appDirectory ?? '.');
  let signalled: (signal: NodeJS.Signals) => void = () => undefined;
  const signal = new Promise<NodeJS.Signals>((resolve) => (signalled = resolve));
  let received: NodeJS.Signals | undefined;
  // Listening for as long as it runs, so that a signal never takes the default exit mid-stop.
  const onSignal = (name: NodeJS.Signals) => {
    if (received) process.exit(128 + constants.signals[name]);
    received = name;
    // A stale ready file would point clients at endpoints that are going.
    if (options.readyFile) rmSync(options.readyFile, { force: true });
    console.log(`\n${name}: stopping the sandbox…`);
    signalled(name);
  };
  for (const name of SIGNALS) process.on(name, onSignal);
  // Printed as they come, and kept, so that a message's story shows the lines about it.
  const logs = functionLog(join(appDirectory, DEFAULT_LOGS_FILE), (line) =>
    process.stdout.write(`${line}\n`),
  );
  try {
    console.log(
      `Starting the Oncely sandbox for the CDK app in ${appDirectory}: synthesising it (bundling its ` +
        'functions), DynamoDB Local and the SQS emulator…',
    );
    const traces = tracesOf(options, appDirectory);
    const sandbox = await startSandbox({
      appDirectory,
      ...(traces && { traces }),
      functionOutput: logs.output,
      environment: options.environment,
      context: options.context,
      oneGroupPerReceive: options.oneGroupPerReceive,
      duplicateDeliveries: options.duplicateDeliveries,
      installNode: options.installNode,
      ...(options.scheduleIntervalSeconds === undefined
        ? {}
        : { scheduleIntervalMs: options.scheduleIntervalSeconds * 1000 }),
      ...(options.asyncRetryDelaySeconds === undefined
        ? {}
        : { asyncRetryDelaysMs: [options.asyncRetryDelaySeconds * 1000] }),
      onBatch: (functionName, report) => {
        if (report.functionError) {
          console.log(
            `${functionName}: batch of ${report.received} failed (${report.functionError}); it will come back`,
          );
        }
      },
      onScheduledRun: (ruleName, functionName, result, attempt) => {
        if (!result.ok) {
          const next = attempt.retrying ? 'Lambda will retry it' : 'given up';
          console.log(
            `${functionName} (schedule ${ruleName}): run ${attempt.number} failed (${result.error.errorType}: ${result.error.errorMessage}); ${next}`,
          );
        }
      },
    });
    let consoleServer: Awaited<ReturnType<typeof serveConsole>>;
    try {
      if (!received) {
        consoleServer = await serveConsole(sandbox.description, options.readyFile, logs.file);
        const description = {
          ...sandbox.description,
          logs: { file: logs.file },
          ...(consoleServer && { console: { url: consoleServer.url, token: consoleServer.token } }),
        };
        // Written before "ready" is printed, and whole: whoever waits for either reads complete JSON.
        if (options.readyFile) writeReadyFile(options.readyFile, description);
        printDescription(description);
        await signal;
      }
    } finally {
      await consoleServer?.close();
      await sandbox.stop();
    }
    if (options.readyFile) rmSync(options.readyFile, { force: true });
    return 0;
  } catch (error) {
    // Interrupted during the start-up: the synth or the JVM died of the signal, which is no failure.
    if (received) return 0;
    throw error;
  } finally {
    for (const name of SIGNALS) process.off(name, onSignal);
    await logs.close();
  }
}

/**
 * The sandbox's traces: in the file asked for (the sandbox then fails if the SDK is missing), by
 * default in {@link DEFAULT_TRACES_FILE} when the SDK is installed, else none, said once.
 */
function tracesOf(options: LocalOptions, appDirectory: string): { file: string } | undefined {
  if (options.noTraces) return undefined;
  if (options.tracesFile) return { file: resolve(options.tracesFile) };
  const missing = missingTracePackages();
  if (missing.length > 0) {
    console.log(`No traces: to collect the functions' spans, npm install --save-dev ${missing.join(' ')}`);
    return undefined;
  }
  return { file: join(appDirectory, DEFAULT_TRACES_FILE) };
}

/** What `oncely local` describes: the sandbox's description, and where its console is. */
type LocalDescription = SandboxDescription & {
  console?: { url: string; token?: string };
  logs?: { file: string };
};

/** The console (docs/console.md) of the sandbox's pipeline; none when the app has no OncelyPipeline. */
async function serveConsole(
  description: SandboxDescription,
  readyFile: string | undefined,
  logsFile: string,
): Promise<{ url: string; token?: string; close(): Promise<void> } | undefined> {
  const { resources } = description;
  if (!resources) return undefined;
  // With leaseRecords: 'valkey', the records of its local cache too.
  const pipeline = await withLeaseRecords(
    connectToSandboxPipeline(readyFile ?? 'this `oncely local`', { ...description, resources }),
  );
  const publisher = await sandboxPublisher(description, resources.publisherFunctionName);
  // Its edge answers CloudWatch's GetMetricData from what the sandbox measures.
  const figures = await pipelineFigures(pipeline, localAwsConfig(description.endpoints.edge), (text) =>
    console.log(text),
  );
  const server = await startConsole(pipeline, {
    tracesFile: description.traces?.file,
    logsFile,
    actions: true,
    publisher,
    metrics: figures?.read,
  });
  return {
    url: server.url,
    token: server.token,
    close: async () => {
      await server.close();
      publisher.close();
      figures?.close();
      pipeline.close();
    },
  };
}

/** Writes to a temporary file beside it, then renames: a reader never sees a half-written file. */
function writeReadyFile(path: string, description: LocalDescription): void {
  const partial = `${path}.${process.pid}.tmp`;
  writeFileSync(partial, `${JSON.stringify(description, null, 2)}\n`);
  renameSync(partial, path);
}

function printDescription(description: LocalDescription): void {
  const { endpoints, resources } = description;
  console.log(`Ready (${description.stackName}, region ${description.region}):`);
  console.log(`  Edge           ${endpoints.edge}   (AWS_ENDPOINT_URL: DynamoDB, SQS and Lambda)`);
  console.log(`  Lambda Invoke  ${endpoints.lambda}   (AWS_ENDPOINT_URL_LAMBDA)`);
  console.log(`  SQS            ${endpoints.sqs}   (AWS_ENDPOINT_URL_SQS)`);
  console.log(`  DynamoDB       ${endpoints.dynamodb}   (AWS_ENDPOINT_URL_DYNAMODB)`);
  for (const cache of description.caches ?? []) {
    console.log(
      `  Valkey         ${cache.endpoint}   (TLS; ${cache.logicalId}, CA ${cache.caCertificateFile})`,
    );
  }
  if (description.traces) {
    console.log(
      `  Traces         ${description.traces.endpoint}   (OTLP/HTTP JSON: your exporter may send here too)`,
    );
    console.log(`                 written to ${description.traces.file}`);
  }
  if (description.logs) console.log(`  Logs           written to ${description.logs.file}`);
  if (description.console)
    console.log(`  Console        ${description.console.url}   (open it in your browser)`);
  if (resources) {
    console.log('Pipeline:');
    console.log(`  publisher      ${resources.publisherFunctionName}`);
    console.log(`  consumer       ${resources.consumerFunctionName}`);
    console.log(`  queue          ${resources.queueUrl}`);
    console.log(`  DLQ            ${resources.dlqUrl}`);
    console.log(`  idempotency    ${resources.idempotencyTableName}`);
  } else {
    console.log('No OncelyPipeline in the app.');
  }
  const pipelineOutputs = Object.values(PIPELINE_OUTPUTS) as string[];
  const others = Object.entries(description.outputs).filter(
    ([key]) => !resources || !pipelineOutputs.some((name) => key.endsWith(name)),
  );
  if (others.length > 0) {
    console.log(`Stack outputs:\n${others.map(([key, value]) => `  ${key} = ${value}`).join('\n')}`);
  }
  const skipped = [...new Set(description.notEmulated.map((resource) => resource.type))].sort();
  console.log(`Not emulated (no local effect): ${skipped.join(', ')}`);
  for (const { stackName, logicalId, type, note } of description.notEmulated) {
    if (note) console.log(`  ${stackName}/${logicalId} (${type}): ${note}`);
  }
  console.log('Press Ctrl-C to stop.');
}

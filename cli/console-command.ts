import { queueNameOf } from '../lambdas/common/tracing.js';
import type { Target } from './command-line.js';
import { readStackMetrics, type StackMetrics } from './console-metrics.js';
import { type ConsolePublisher, sandboxPublisher } from './console-publish.js';
import { startConsole } from './console-server.js';
import { readReadyFile } from './ready-file.js';
import { connect, type PipelineConnection } from './target.js';

export interface ConsoleCommandOptions {
  /** Where the address goes; standard output by default. */
  print?: (text: string) => void;
  /** Serves until this settles; by default until SIGINT or SIGTERM. */
  until?: Promise<unknown>;
}

/**
 * `oncely console`: serves the console (docs/console.md) on 127.0.0.1 for a running sandbox or a
 * deployed stack, with the target's connection (on a stack, the user's own credentials), until
 * Ctrl-C. On a stack it only reads, unless `--allow-actions`.
 */
export async function runConsole(
  command: { target: Target; port?: number; allowActions: boolean },
  options: ConsoleCommandOptions = {},
): Promise<number> {
  const print = options.print ?? ((text: string) => console.log(text));
  const pipeline = await connect(command.target);
  let publisher: ConsolePublisher | undefined;
  let metrics: Awaited<ReturnType<typeof stackMetrics>>;
  try {
    const sandbox =
      command.target.kind === 'sandbox'
        ? await readReadyFile(command.target.readyFile, 'outputs')
        : undefined;
    // A sandbox is the user's own: its page acts, and publishes. A stack's only acts when asked to.
    const actions = sandbox !== undefined || command.allowActions;
    const lambdaEndpoint = sandbox?.endpoints.lambda;
    if (sandbox && lambdaEndpoint) {
      publisher = await sandboxPublisher(
        { region: sandbox.region, endpoints: { lambda: lambdaEndpoint } },
        pipeline.resources.publisherFunctionName,
      );
    }
    metrics = sandbox ? undefined : await stackMetrics(pipeline, print);
    const server = await startConsole(pipeline, {
      port: command.port,
      tracesFile: sandbox?.traces?.file,
      logsFile: sandbox?.logs?.file,
      actions,
      publisher,
      metrics: metrics?.read,
    });
    const mode = actions ? 'it acts with the token in this address' : 'it only reads';
    print(`The console of ${pipeline.name}: ${server.url}  (${mode}; Ctrl-C to stop)`);
    try {
      await (options.until ?? untilSignalled());
    } finally {
      await server.close();
    }
    return 0;
  } finally {
    publisher?.close();
    metrics?.close();
    pipeline.close();
  }
}

/**
 * A stack's CloudWatch figures, read with the user's credentials: its publisher's and consumer's
 * counts, its queue's and DLQ's oldest ages. Without the optional `@aws-sdk/client-cloudwatch`,
 * none, said once.
 */
async function stackMetrics(
  pipeline: PipelineConnection,
  print: (text: string) => void,
): Promise<{ read: () => Promise<StackMetrics>; close(): void } | undefined> {
  let module: typeof import('@aws-sdk/client-cloudwatch');
  try {
    module = await import('@aws-sdk/client-cloudwatch');
  } catch {
    print(
      "No CloudWatch figures (the functions' counts, the queues' oldest ages): npm install --save-dev @aws-sdk/client-cloudwatch",
    );
    return undefined;
  }
  const cloudwatch = new module.CloudWatchClient({});
  const { resources } = pipeline;
  const functions = [resources.publisherFunctionName, resources.consumerFunctionName];
  const queues = [resources.queueUrl, resources.dlqUrl].map(queueNameOf);
  return { read: () => readStackMetrics(cloudwatch, functions, queues), close: () => cloudwatch.destroy() };
}

function untilSignalled(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop).off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop).on('SIGTERM', stop);
  });
}

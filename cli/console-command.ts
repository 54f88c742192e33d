import { localAwsConfig } from '../sandbox/local-aws-config.js';
import type { Target } from './command-line.js';
import { type PipelineFigures, pipelineFigures } from './console-metrics.js';
import { type ConsolePublisher, sandboxPublisher } from './console-publish.js';
import { startConsole } from './console-server.js';
import { withLeaseRecords } from './lease-records-cache.js';
import { readReadyFile } from './ready-file.js';
import { type StackLogs, stackLogs } from './stack-logs.js';
import { connect } from './target.js';

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
  // On a pipeline with leaseRecords: 'valkey', its cache's records too (a stack's through --valkey-endpoint).
  const pipeline = await withLeaseRecords(await connect(command.target));
  let publisher: ConsolePublisher | undefined;
  let metrics: PipelineFigures | undefined;
  let logs: StackLogs | undefined;
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
    // The sandbox's edge answers CloudWatch's GetMetricData from what it measures.
    const edge = sandbox?.endpoints.edge;
    metrics =
      sandbox && !edge
        ? undefined
        : await pipelineFigures(
            pipeline,
            edge ? { ...localAwsConfig(edge), region: sandbox?.region } : {},
            print,
          );
    // A stack's message list and log lines, from CloudWatch Logs; a sandbox's from its own files.
    logs = sandbox ? undefined : await stackLogs(pipeline, command.target.outputPrefix ?? '', {}, print);
    const server = await startConsole(pipeline, {
      port: command.port,
      tracesFile: sandbox?.traces?.file,
      logsFile: sandbox?.logs?.file,
      actions,
      publisher,
      metrics: metrics?.read,
      stackLogs: logs,
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
    logs?.close();
    pipeline.close();
  }
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

import type { OperationsCommand } from './command-line.js';
import { listDeadLetters } from './dead-letter-list.js';
import { redriveDeadLetters } from './dead-letter-redrive.js';
import { listUnresolved, resolveAsCompleted } from './in-doubt-records.js';
import { resolveAsRetry } from './in-doubt-retry.js';
import {
  describeDeadLetters,
  describeOutbox,
  describeRedrive,
  describeResolution,
  describeUnresolved,
} from './operations-report.js';
import { listPendingOutbox } from './outbox-list.js';
import { findOutbox } from './outbox-target.js';
import { connect, connectToOutputs } from './target.js';

export interface OperationsOptions {
  /** Where the result goes; standard output by default. */
  print?: (text: string) => void;
}

/**
 * `oncely dlq …`, `oncely in-doubt …` and `oncely outbox …`: connects to the target, runs the
 * command, prints its result (for people, or as JSON with `--json`) and returns the exit code.
 * Failures are thrown as the typed errors of `operations-errors.ts`.
 */
export async function runOperation(
  command: OperationsCommand,
  options: OperationsOptions = {},
): Promise<number> {
  const print = options.print ?? ((text: string) => console.log(text));
  const report = <T>(result: T, describe: (result: T) => string) =>
    print(command.json ? JSON.stringify(result, null, 2) : describe(result));
  if (command.name === 'outbox-list') {
    // An outbox needs no pipeline in its stack: it may publish to another stack's queue.
    const target = await connectToOutputs(command.target);
    try {
      const outbox = findOutbox(target, command.outputPrefix);
      const olderThanSeconds = command.stuck ? outbox.stuckAfterSeconds : command.olderThanSeconds;
      report(await listPendingOutbox(target.dynamodb, outbox, { olderThanSeconds }), describeOutbox);
      return 0;
    } finally {
      target.close();
    }
  }
  const pipeline = await connect(command.target);
  const { resources } = pipeline;
  try {
    switch (command.name) {
      case 'dlq-list':
        report(await listDeadLetters(pipeline.sqs, resources.dlqUrl), describeDeadLetters);
        return 0;
      case 'dlq-redrive': {
        const timeoutMs = command.timeoutSeconds === undefined ? undefined : command.timeoutSeconds * 1000;
        report(await redriveDeadLetters(pipeline.sqs, resources, { timeoutMs }), (result) =>
          describeRedrive(result, resources.queueUrl),
        );
        return 0;
      }
      case 'in-doubt-list':
        report(await listUnresolved(pipeline), (records) =>
          describeUnresolved(records, resources.idempotencyTableName),
        );
        return 0;
      case 'in-doubt-resolve': {
        const resolve =
          command.as === 'completed'
            ? resolveAsCompleted(pipeline, command.id)
            : resolveAsRetry(pipeline, command.id, { republish: command.republish });
        report(await resolve, (resolution) => describeResolution(resolution, resources.queueUrl));
        return 0;
      }
    }
  } finally {
    pipeline.close();
  }
}

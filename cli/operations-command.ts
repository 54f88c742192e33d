import type { OperationsCommand } from './command-line.js';
import { listDeadLetters } from './dead-letter-list.js';
import { redriveDeadLetters } from './dead-letter-redrive.js';
import { listUnresolved, resolveAsCompleted } from './in-doubt-records.js';
import { resolveAsRetry } from './in-doubt-retry.js';
import { describeRecordToResolve, readRecordToResolve } from './in-doubt-show.js';
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
import { EXIT_NOT_CONFIRMED, processTerminal, type Terminal } from './terminal.js';

export interface OperationsOptions {
  /** Where the result goes; standard output by default. */
  print?: (text: string) => void;
  /** Where a command shows what it is about to do and asks first; the process's terminal by default. */
  terminal?: Terminal;
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
        if (!command.yes) {
          const terminal = options.terminal ?? processTerminal;
          terminal.show(describeRecordToResolve(await readRecordToResolve(pipeline, command.id)));
          const meaning =
            command.as === 'completed' ? 'it happened: never run it' : 'it did not happen: run it again';
          const answer = await terminal.ask(`Resolve ${command.id} --as ${command.as} (${meaning})? [y/N] `);
          if (answer !== true) {
            terminal.show(
              answer === false
                ? 'Not resolved: nothing changed.'
                : 'Not resolved: this command asks before it acts and there is no terminal to ask on. Check the ' +
                    'record above, then run it again with --yes.',
            );
            return EXIT_NOT_CONFIRMED;
          }
        }
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

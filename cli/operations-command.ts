import { linesAbout } from '../sandbox/function-log.js';
import { TraceFileReader } from '../sandbox/trace-file.js';
import type { OperationsCommand } from './command-line.js';
import { confirmRedrive } from './dead-letter-confirm.js';
import { discardDeadLetters } from './dead-letter-discard.js';
import { listDeadLetters } from './dead-letter-list.js';
import { DEFAULT_REDRIVE_TIMEOUT_SECONDS, redriveDeadLetters } from './dead-letter-redrive.js';
import { EXIT_CODES } from './exit-codes.js';
import { describeHistory } from './history-report.js';
import { listUnresolved, resolveAsCompleted } from './in-doubt-records.js';
import { resolveAsRetry } from './in-doubt-retry.js';
import { describeRecordToResolve, readRecordToResolve } from './in-doubt-show.js';
import { withLeaseRecords } from './lease-records-cache.js';
import { readMessageHistory } from './message-history.js';
import {
  describeDeadLetters,
  describeDiscard,
  describeOutbox,
  describeRedrive,
  describeResolution,
  describeUnresolved,
} from './operations-report.js';
import { listPendingOutbox } from './outbox-list.js';
import { findOutbox } from './outbox-target.js';
import { readReadyFile } from './ready-file.js';
import { acquireRedriveLease } from './redrive-lease.js';
import { stackLogs } from './stack-logs.js';
import { connect, connectToOutputs } from './target.js';
import { processTerminal, type Terminal } from './terminal.js';

/** How much of each body `dlq list`'s table shows. */
const TABLE_BODY_CHARACTERS = 60;

export interface OperationsOptions {
  /** Where the result goes; standard output by default. */
  print?: (text: string) => void;
  /**
   * Where a command shows what it is about to do and asks first (`dlq redrive` before moving more
   * than a few messages, `in-doubt resolve` always); the process's terminal by default.
   */
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
  const terminal = options.terminal ?? processTerminal;
  const report = <T>(result: T, describe: (result: T) => string) =>
    print(command.json ? JSON.stringify(result, null, 2) : describe(result));
  if (command.name === 'outbox-list') {
    // An outbox needs no pipeline in its stack: it may publish to another stack's queue.
    const target = await connectToOutputs(command.target);
    try {
      const outbox = findOutbox(target, command.target.outputPrefix);
      const olderThanSeconds = command.stuck ? outbox.stuckAfterSeconds : command.olderThanSeconds;
      report(await listPendingOutbox(target.dynamodb, outbox, { olderThanSeconds }), describeOutbox);
      return EXIT_CODES.done;
    } finally {
      target.close();
    }
  }
  const connected = await connect(command.target);
  // The records' commands read the lease records cache too, when the pipeline keeps them there
  // (DESIGN §3.1): connected to here, or the error says how to reach it; never the table's alone.
  const pipeline = RECORD_COMMANDS.has(command.name) ? await withLeaseRecords(connected) : connected;
  const { resources } = pipeline;
  try {
    switch (command.name) {
      case 'dlq-list': {
        // The table shows a glimpse of each body; --json the whole body, up to the limit.
        const bodyCharacters = command.json ? undefined : TABLE_BODY_CHARACTERS;
        const timeoutMs = command.timeoutSeconds === undefined ? undefined : command.timeoutSeconds * 1000;
        const { limit } = command;
        const listing = await listDeadLetters(pipeline.sqs, resources.dlqUrl, {
          limit,
          bodyCharacters,
          timeoutMs,
        });
        report(listing, describeDeadLetters);
        return listing.end === 'complete' ? EXIT_CODES.done : EXIT_CODES.unfinished;
      }
      case 'dlq-redrive': {
        const refusal = await confirmRedrive(pipeline.sqs, resources, command, terminal);
        if (refusal) {
          print(command.json ? JSON.stringify({ refused: refusal }, null, 2) : refusal);
          return EXIT_CODES.notConfirmed;
        }
        const timeoutMs = (command.timeoutSeconds ?? DEFAULT_REDRIVE_TIMEOUT_SECONDS) * 1000;
        const { dryRun, groupId, key, limit } = command;
        // One redrive at a time (a dry run moves nothing, and needs none).
        const leased = dryRun
          ? undefined
          : acquireRedriveLease(pipeline.dynamodb, resources.idempotencyTableName, timeoutMs);
        // Ctrl-C gives the lease back before exiting, so the next redrive need not wait for it to
        // run out; from before the lease is asked for, as one may be written before its answer
        // comes. What the run held reappears in the DLQ within a minute (its visibility timeout).
        const giveBackOnInterrupt = () => {
          void leased
            ?.then((taken) => taken.release())
            .catch(() => undefined)
            .finally(() => process.exit(EXIT_CODES.interrupted));
        };
        if (leased) process.once('SIGINT', giveBackOnInterrupt);
        const lease = await leased?.catch((error: unknown) => {
          process.off('SIGINT', giveBackOnInterrupt);
          throw error;
        });
        const result = await redriveDeadLetters(pipeline.sqs, resources, {
          timeoutMs,
          dryRun,
          groupId,
          key,
          limit,
        }).finally(() => {
          process.off('SIGINT', giveBackOnInterrupt);
          return lease?.release();
        });
        report(result, (described) => describeRedrive(described, resources.queueUrl));
        return result.finished ? EXIT_CODES.done : EXIT_CODES.unfinished;
      }
      case 'dlq-discard': {
        const timeoutMs = command.timeoutSeconds === undefined ? undefined : command.timeoutSeconds * 1000;
        const result = await discardDeadLetters(pipeline, resources, command.messageIds, command.reason, {
          timeoutMs,
        });
        report(result, (described) => describeDiscard(described, resources.idempotencyTableName));
        return result.notFound.length === 0 ? EXIT_CODES.done : EXIT_CODES.unfinished;
      }
      case 'history': {
        // The sandbox's spans, when it collects them; a stack's are in the user's own tracing backend.
        // Log lines from the sandbox's function log, or a stack's CloudWatch Logs.
        const sandbox =
          command.target.kind === 'sandbox'
            ? await readReadyFile(command.target.readyFile, 'outputs')
            : undefined;
        const { key, recordIds } = command;
        const tracesFile = sandbox?.traces?.file;
        const logsFile = sandbox?.logs?.file;
        const cloudwatchLogs = sandbox
          ? undefined
          : await stackLogs(pipeline, command.target.outputPrefix ?? '', {}, (text) => console.error(text));
        try {
          const sources = {
            spans: tracesFile ? new TraceFileReader(tracesFile) : undefined,
            logs: logsFile ? (about: string) => linesAbout(logsFile, about) : cloudwatchLogs?.linesAbout,
          };
          report(await readMessageHistory(pipeline, { key, recordIds, ...sources }), describeHistory);
        } finally {
          cloudwatchLogs?.close();
        }
        return EXIT_CODES.done;
      }
      case 'in-doubt-list': {
        const page = await listUnresolved(pipeline, { limit: command.limit, after: command.after });
        report(page, (listed) => describeUnresolved(listed, resources.idempotencyTableName));
        return page.next === undefined ? EXIT_CODES.done : EXIT_CODES.unfinished;
      }
      case 'in-doubt-resolve': {
        if (!command.yes) {
          terminal.show(describeRecordToResolve(await readRecordToResolve(pipeline, command.id)));
          const meaning =
            command.as === 'completed' ? 'it happened: never run it' : 'it did not happen: run it again';
          const answer = await terminal.ask(`Resolve ${command.id} --as ${command.as} (${meaning})? [y/N] `);
          if (answer !== true) {
            const refusal =
              answer === false
                ? 'Not resolved: nothing changed.'
                : 'Not resolved: this command asks before it acts and there is no terminal to ask on. Check the ' +
                  'record above, then run it again with --yes.';
            // As `dlq redrive`'s: a script reading --json gets a document saying why nothing happened.
            if (command.json) print(JSON.stringify({ refused: refusal }, null, 2));
            else terminal.show(refusal);
            return EXIT_CODES.notConfirmed;
          }
        }
        const resolve =
          command.as === 'completed'
            ? resolveAsCompleted(pipeline, command.id)
            : resolveAsRetry(pipeline, command.id, { republish: command.republish });
        report(await resolve, (resolution) => describeResolution(resolution, resources.queueUrl));
        return EXIT_CODES.done;
      }
    }
    // Every command is one of the cases above.
    return command satisfies never;
  } finally {
    pipeline.close();
  }
}

/** The commands that read and write records: `in-doubt` and `history`. */
const RECORD_COMMANDS: ReadonlySet<string> = new Set(['in-doubt-list', 'in-doubt-resolve', 'history']);

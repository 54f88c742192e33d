import type { CloudWatchLogsClient, CloudWatchLogsClientConfig } from '@aws-sdk/client-cloudwatch-logs';
import { PIPELINE_LOG_GROUP_OUTPUTS } from '../lib/constructs/pipeline-outputs.js';
import type { LoggedEntry } from '../sandbox/function-log.js';
import { MESSAGES_LISTED } from './console-activity.js';
import type { TargetConnection } from './target.js';

/** What the console reads of a stack's CloudWatch Logs: the consumer's verdicts, a key's lines. */
export interface StackLogs {
  /** The consumer's lines that say a record's verdict (`outcome`), the latest first, over the last {@link VERDICTS_WINDOW_MINUTES} minutes. */
  verdicts(): Promise<LoggedEntry[]>;
  /** The consumer's and the publisher's lines about `key` (`messageKey`), written since `sinceMs`. */
  linesAbout(key: string, sinceMs: number): Promise<LoggedEntry[]>;
  close(): void;
}

/** How far back the message list looks: what a person watching a running pipeline asks first. */
export const VERDICTS_WINDOW_MINUTES = 15;
/** The windows the list reads, the latest first, until it has a full list: minutes back from now. */
const VERDICT_WINDOWS_MINUTES = [1, 5, VERDICTS_WINDOW_MINUTES];
/** The most events one read takes (a busy minute is cut here: the list says so by its size). */
const EVENTS_READ = 5_000;
/**
 * How long a read is reused: the page asks every 2 s, and FilterLogEvents is limited per account
 * and region (5 requests a second by default), shared with whatever else reads the logs.
 */
const REUSED_FOR_MS = 10_000;
/** A key that can be a quoted term of a filter pattern as it is: anything else is filtered here. */
const PLAIN_KEY = /^[\w.:@/#+=-]+$/;

/**
 * The stack's log groups by its outputs (`ConsumerLogGroupName`, `PublisherLogGroupName` after
 * `prefix`), read through a CloudWatch Logs client of `config`. None, said through `print`, without
 * the optional `@aws-sdk/client-cloudwatch-logs` or when the stack has no such outputs.
 */
export async function stackLogs(
  target: Pick<TargetConnection, 'name' | 'outputs'>,
  prefix: string,
  config: CloudWatchLogsClientConfig,
  print: (text: string) => void,
): Promise<StackLogs | undefined> {
  const consumer = target.outputs[`${prefix}${PIPELINE_LOG_GROUP_OUTPUTS.consumer}`];
  const publisher = target.outputs[`${prefix}${PIPELINE_LOG_GROUP_OUTPUTS.publisher}`];
  if (!consumer) {
    print(
      `No message list or log lines: ${target.name} has no output ${prefix}${PIPELINE_LOG_GROUP_OUTPUTS.consumer} (deploy it with this version).`,
    );
    return undefined;
  }
  let module: typeof import('@aws-sdk/client-cloudwatch-logs');
  try {
    module = await import('@aws-sdk/client-cloudwatch-logs');
  } catch {
    print(
      'No message list or log lines (from CloudWatch Logs): npm install --save-dev @aws-sdk/client-cloudwatch-logs',
    );
    return undefined;
  }
  const logs = new module.CloudWatchLogsClient(config);
  const read = (group: string, pattern: string, fromMs: number, toMs: number) =>
    readEvents(logs, module.FilterLogEventsCommand, group, pattern, fromMs, toMs);
  const verdicts = reused(async () => {
    const nowMs = Date.now();
    let lines: LoggedEntry[] = [];
    for (const minutes of VERDICT_WINDOWS_MINUTES) {
      // The term every verdict line holds; the lines are parsed and checked here.
      lines = (await read(consumer, 'outcome', nowMs - minutes * 60_000, nowMs)).filter(
        ({ entry }) => typeof entry.outcome === 'string' && typeof entry.messageKey === 'string',
      );
      if (new Set(lines.map(({ entry }) => entry.messageKey)).size >= MESSAGES_LISTED) break;
    }
    return lines.sort((a, b) => b.at - a.at);
  });
  const aboutKeys = new Map<string, () => Promise<LoggedEntry[]>>();
  return {
    verdicts,
    linesAbout: (key, sinceMs) => {
      let about = aboutKeys.get(key);
      if (!about) {
        about = reused(async () => {
          const pattern = PLAIN_KEY.test(key) ? `"${key}"` : 'messageKey';
          const groups = publisher ? [consumer, publisher] : [consumer];
          const found = await Promise.all(groups.map((group) => read(group, pattern, sinceMs, Date.now())));
          return found
            .flat()
            .filter(({ entry }) => entry.messageKey === key)
            .sort((a, b) => a.at - b.at);
        });
        // One key's story is shown at a time: the cache holds the latest few.
        if (aboutKeys.size >= 20) aboutKeys.delete(aboutKeys.keys().next().value as string);
        aboutKeys.set(key, about);
      }
      return about();
    },
    close: () => logs.destroy(),
  };
}

/** A log group's events matching `pattern` in [fromMs, toMs], each parsed; at most {@link EVENTS_READ}. */
async function readEvents(
  logs: CloudWatchLogsClient,
  FilterLogEventsCommand: typeof import('@aws-sdk/client-cloudwatch-logs').FilterLogEventsCommand,
  logGroupName: string,
  filterPattern: string,
  fromMs: number,
  toMs: number,
): Promise<LoggedEntry[]> {
  const entries: LoggedEntry[] = [];
  const functionName = logGroupName.split('/').pop() ?? logGroupName;
  let nextToken: string | undefined;
  do {
    const page = await logs.send(
      new FilterLogEventsCommand({
        logGroupName,
        filterPattern,
        startTime: fromMs,
        endTime: toMs,
        nextToken,
      }),
    );
    for (const event of page.events ?? []) {
      const entry = jsonOf(event.message ?? '');
      if (entry)
        entries.push({ at: event.timestamp ?? 0, function: functionName, line: event.message ?? '', entry });
    }
    nextToken = page.nextToken;
  } while (nextToken && entries.length < EVENTS_READ);
  return entries;
}

/**
 * A line's JSON entry: the line itself (Powertools' Logger, or Lambda's JSON log format), or what
 * follows Lambda's text format's prefix (time, request id, level); none for a line of plain text.
 */
function jsonOf(message: string): Record<string, unknown> | undefined {
  const start = message.indexOf('{');
  if (start < 0) return undefined;
  try {
    const parsed: unknown = JSON.parse(message.slice(start));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** `read`, its answer reused for {@link REUSED_FOR_MS}; one read at a time. */
function reused<T>(read: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (!last || Date.now() - last.at >= REUSED_FOR_MS) {
      const value = read();
      last = { at: Date.now(), value };
      // A failed read is not reused: the next asks again.
      value.catch(() => {
        if (last?.value === value) last = undefined;
      });
    }
    return last.value;
  };
}

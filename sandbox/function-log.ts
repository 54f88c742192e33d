import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { FunctionOutput } from './function-runtime.js';

/** One line a function wrote, as the sandbox's function log keeps it (one JSON object a line). */
export interface LoggedLine {
  /** Epoch milliseconds, when the sandbox read it. */
  at: number;
  /** The function that wrote it. */
  function: string;
  /** The line as the function wrote it: a JSON log entry, or plain text. */
  line: string;
}

/** A function's log line as a JSON entry: a sandbox's from its function log, a stack's from CloudWatch Logs. */
export type LoggedEntry = LoggedLine & { entry: Record<string, unknown> };

/**
 * The sandbox's function log: every line the functions write, also printed as `oncely local`
 * prints it, kept in `file` (emptied first) so that a message's story can show the lines about it.
 */
export function functionLog(
  file: string,
  print: (line: string) => void,
): { file: string; output: FunctionOutput; close(): Promise<void> } {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, '');
  const stream = createWriteStream(file, { flags: 'a' });
  return {
    file,
    output: (line, functionName) => {
      print(line);
      stream.write(
        `${JSON.stringify({ at: Date.now(), function: functionName, line } satisfies LoggedLine)}\n`,
      );
    },
    close: () => new Promise((resolve) => stream.end(resolve)),
  };
}

/** The lines of a function log that name `key` as their message's (`messageKey`, as the consumer logs it). */
export async function linesAbout(file: string, key: string): Promise<LoggedEntry[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const found: LoggedEntry[] = [];
  for (const row of text.split('\n')) {
    if (row === '') continue;
    const logged = JSON.parse(row) as LoggedLine;
    let entry: unknown;
    try {
      entry = JSON.parse(logged.line);
    } catch {
      continue;
    }
    if (
      typeof entry === 'object' &&
      entry !== null &&
      (entry as Record<string, unknown>).messageKey === key
    ) {
      found.push({ ...logged, entry: entry as Record<string, unknown> });
    }
  }
  return found;
}

/**
 * The message types `functionName` said it handles in the latest line that lists them
 * (`messageTypes`, as a consumer logs on its first batch); none before its first invocation.
 */
export async function messageTypesOf(file: string, functionName: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  let types: string[] = [];
  for (const row of text.split('\n')) {
    // Most lines are not it: parse only a line of that function that names the field.
    if (!row.includes('messageTypes')) continue;
    const logged = JSON.parse(row) as LoggedLine;
    if (logged.function !== functionName) continue;
    try {
      const entry = JSON.parse(logged.line) as { messageTypes?: unknown };
      if (Array.isArray(entry.messageTypes)) types = entry.messageTypes.filter((t) => typeof t === 'string');
    } catch {
      // plain text: not a consumer's line
    }
  }
  return types;
}

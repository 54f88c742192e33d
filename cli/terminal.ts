import { createInterface } from 'node:readline/promises';

/**
 * Where a command shows what it is about to do and asks before doing it. Both go to standard error,
 * so that standard output carries the result alone (`--json` stays one document).
 */
export interface Terminal {
  show(text: string): void;
  /** True for yes, false for no, undefined when there is no one to ask (not a terminal). */
  ask(question: string): Promise<boolean | undefined>;
}

/** The process's own terminal: asks on standard input only when it is one. */
export const processTerminal: Terminal = {
  show: (text) => {
    process.stderr.write(`${text}\n`);
  },
  ask: async (question) => {
    if (!process.stdin.isTTY) return undefined;
    const readline = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return /^y(es)?$/i.test((await readline.question(question)).trim());
    } finally {
      readline.close();
    }
  },
};

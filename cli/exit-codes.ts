/**
 * The `oncely` command's exit codes (docs/operations.md, "Exit codes"): whether the command finished
 * its job, for scripts and for an operator who trusts it.
 */
export const EXIT_CODES = {
  /** It finished its job. */
  done: 0,
  /** It failed: the error says why and what to do. */
  failed: 1,
  /** The command line is wrong. */
  usage: 2,
  /** It stopped with its job unfinished (messages left, hidden, not found; a partial listing): the output says what. */
  unfinished: 3,
  /** It would act on more than a few messages and got no confirmation (no terminal and no `--yes`, or the answer no). */
  notConfirmed: 4,
  /** Interrupted (Ctrl-C, SIGINT), as shells count it: 128 + 2. A `dlq redrive` gives its lease back first. */
  interrupted: 130,
} as const;

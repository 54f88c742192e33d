#!/usr/bin/env node

/**
 * The `oncely` command: `oncely local` runs the whole pipeline on this machine; `oncely dlq`,
 * `oncely in-doubt`, `oncely outbox`, `oncely history` and `oncely console` operate a running
 * pipeline, local or deployed. Exit codes:
 * 0 done, 1 failed, 2 the command line is wrong; the operations commands' others in
 * cli/exit-codes.ts (docs/operations.md, "Exit codes").
 */

import { CliUsageError, parseCommandLine, USAGE } from '../cli/command-line.js';
import { runOperation } from '../cli/operations-command.js';
import { assertToolchain, TOOLCHAINS } from '../lib/constructs/missing-toolchain.js';

// On a Node.js older than the SDK's coming floor (22, as package.json's engines), the SDK's notice
// about its own future support would only clutter an operator's output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

async function main(argv: string[]): Promise<number> {
  const command = parseCommandLine(argv);
  switch (command.name) {
    case 'help':
      console.log(USAGE);
      return 0;
    case 'local':
      // Loaded only for `local`: the operations commands need none of the sandbox, and a project
      // without its optional peer dependencies learns what to install before anything starts.
      assertToolchain('`oncely local`', TOOLCHAINS.local);
      return (await import('../cli/local-command.js')).runLocal(command.options);
    case 'console':
      return (await import('../cli/console-command.js')).runConsole(command);
    default:
      return runOperation(command);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof CliUsageError) console.error(`${error.message}\n\n${USAGE}`);
    else if (error instanceof Error) console.error(`${error.name}: ${error.message}`);
    else console.error(String(error));
    process.exitCode = error instanceof CliUsageError ? 2 : 1;
  },
);

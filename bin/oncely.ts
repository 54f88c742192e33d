#!/usr/bin/env -S npx tsx
import { CliUsageError, parseCommandLine, USAGE } from '../cli/command-line';
/**
 * The `oncely` command: `oncely local` runs the whole pipeline on this machine; `oncely dlq` and
 * `oncely in-doubt` operate a running pipeline, local or deployed.
 */
import { runLocal } from '../cli/local-command';

// The SDK's notice about future Node versions would only clutter an operator's terminal.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

async function main(argv: string[]): Promise<number> {
  const command = parseCommandLine(argv);
  switch (command.name) {
    case 'help':
      console.log(USAGE);
      return 0;
    case 'local':
      return runLocal(command.options);
    default:
      throw new CliUsageError(`oncely ${command.name.replace('-', ' ')} is not available yet.`);
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

import { spawn } from 'node:child_process';
import { delimiter, dirname } from 'node:path';
import { installLambdaNode } from '../sandbox/node-binary.js';

// `tsx tools/on-lambda-node.ts COMMAND [ARGS…]`: runs COMMAND with the Node.js major Lambda runs
// first on its PATH — installed once from the npm registry into .oncely/node-24, as the sandbox
// installs it — so that `npm test` judges the code on the Node.js it runs on in Lambda, whatever
// this machine's Node is. What COMMAND starts through `node`, `npx` or a package's bin runs on it too.

/** The major of `NODEJS_24_X`, the runtime the constructs give every function. */
const LAMBDA_NODE_MAJOR = 24;

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('usage: tsx tools/on-lambda-node.ts COMMAND [ARGS…]');
  process.exit(2);
}

const node = installLambdaNode(LAMBDA_NODE_MAJOR);
// In this process's group, so that a terminal's Ctrl-C reaches the command as it would without this
// wrapper; a signal sent to this process alone is passed on. Either way the command stops its own.
const child = spawn(command, args, {
  stdio: 'inherit',
  env: { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}` },
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => child.kill(signal));
}
child.once('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

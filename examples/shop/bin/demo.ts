/**
 * `npm start`: runs the whole pipeline locally and drives a few thousand events through it, with
 * trouble injected on purpose; exits 0 only if every check of the report passes.
 */
import { runDemo } from '../demo/run-demo.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
console.log('Oncely demo: effectively-once effects over at-least-once delivery, with no AWS account\n');
// On a terminal, progress rewrites one line; in a log (CI), it is printed every few seconds.
let lastProgress = 0;
const progress = (line: string) => {
  if (process.stdout.isTTY) process.stdout.write(`\r${line.padEnd(process.stdout.columns - 1)}`);
  else if (Date.now() - lastProgress > 5_000) {
    lastProgress = Date.now();
    console.log(line);
  }
};
const report = await runDemo(
  { customers: 150, ordersPerCustomer: 10, skus: 12 },
  (line) => console.log(line),
  progress,
);
const failed = report.checks.filter((check) => !check.ok).length;
console.log(failed === 0 ? '\nAll checks passed.' : `\n${failed} of ${report.checks.length} checks failed.`);
process.exitCode = failed === 0 ? 0 : 1;

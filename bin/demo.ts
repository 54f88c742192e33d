/**
 * `npm start`: runs the whole pipeline locally and drives about 1,700 events through it, the orders
 * through the orders service's outbox, with trouble injected on purpose; exits 0 only if every
 * check of the report passes.
 */
import { runDemo } from '../demo/run-demo.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
console.log('Oncely demo: effectively-once effects over at-least-once delivery, with no AWS account\n');
// On a terminal, progress rewrites one line, left as it last was when a line is printed; in a log
// (CI), it is printed every few seconds.
let lastProgress = 0;
let progressShown = false;
const progress = (line: string) => {
  if (process.stdout.isTTY) {
    process.stdout.write(`\r${line.padEnd(process.stdout.columns - 1)}`);
    progressShown = true;
  } else if (Date.now() - lastProgress > 5_000) {
    lastProgress = Date.now();
    console.log(line);
  }
};
const print = (line: string) => {
  if (progressShown) process.stdout.write('\n');
  progressShown = false;
  console.log(line);
};
const report = await runDemo({ customers: 150, ordersPerCustomer: 6, skus: 12 }, print, progress);
const failed = report.checks.filter((check) => !check.ok).length;
console.log(failed === 0 ? '\nAll checks passed.' : `\n${failed} of ${report.checks.length} checks failed.`);
process.exitCode = failed === 0 ? 0 : 1;

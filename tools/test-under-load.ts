import { type ChildProcess, spawn } from 'node:child_process';
import { trackProcessGroup } from '../sandbox/process-group.js';

// `npm run test:under-load`: the whole suite, as `npm test` runs it, several times in a row while
// another process keeps one core busy — what a CI machine shared with other work looks like. A test
// that counts on timing fails here; one that waits for its condition with a bound does not.
//
//   npm run test:under-load -- [--runs N]   (3 by default)

const runs = runsFrom(process.argv.slice(2));

/** One process that spins on one core until it is killed: another job on the machine. */
function busyCore(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { detached: true, stdio: 'ignore' });
}

function runSuite(): Promise<number> {
  const child = spawn('npm', ['test'], { stdio: 'inherit', detached: true });
  const group = trackProcessGroup(child);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      void group.stop().then(() => resolve(code ?? (signal ? 1 : 0)));
    });
  });
}

function runsFrom(args: string[]): number {
  if (args.length === 0) return 3;
  const [flag, value] = args;
  const count = Number(value);
  if (flag !== '--runs' || args.length !== 2 || !Number.isInteger(count) || count < 1) {
    throw new Error(
      `usage: npm run test:under-load -- [--runs N] (N a whole number ≥ 1); got: ${args.join(' ')}`,
    );
  }
  return count;
}

const load = trackProcessGroup(busyCore());
const results: { run: number; exitCode: number; seconds: number }[] = [];
try {
  for (let run = 1; run <= runs; run++) {
    console.log(`\n[test:under-load] run ${run} of ${runs}, one core kept busy by pid ${load.pid}`);
    const started = Date.now();
    const exitCode = await runSuite();
    results.push({ run, exitCode, seconds: Math.round((Date.now() - started) / 1000) });
  }
} finally {
  await load.stop();
}
for (const { run, exitCode, seconds } of results) {
  console.log(
    `[test:under-load] run ${run}: ${exitCode === 0 ? 'passed' : `FAILED (exit ${exitCode})`} in ${seconds} s`,
  );
}
process.exitCode = results.every(({ exitCode }) => exitCode === 0) ? 0 : 1;

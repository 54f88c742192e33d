// CPU time as Linux's /proc counts it, per thread. Plain JavaScript, so that a function's container
// (function-worker.mjs, a child process on its runtime's Node.js) reads its main thread's with the
// same code the benchmarks use (bench/cpu-time.ts).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * User plus system time of a `/proc/…/stat` file, in clock ticks: fields 14 and 15, counted after
 * the command name (which may hold spaces and parentheses, so the count starts after its last `)`).
 * Throws where the file does not exist.
 */
export function cpuTicksOf(statFile) {
  const stat = readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * The calling thread's CPU time so far in ms, from the scheduler's count in nanoseconds (the first
 * field of `schedstat`: a clock tick, 10 ms, would be coarser than an invocation); undefined
 * without /proc.
 */
export function threadCpuMs() {
  try {
    const onCpuNs = Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
    return Number.isFinite(onCpuNs) ? onCpuNs / 1e6 : undefined;
  } catch {
    return undefined;
  }
}

let tickMs;

/** One clock tick in ms (`getconf CLK_TCK`, 100 a second where it cannot say), asked once per thread. */
export function msPerTick() {
  if (tickMs === undefined) {
    const { stdout } = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    tickMs = 1000 / (Number(stdout?.trim()) || 100);
  }
  return tickMs;
}

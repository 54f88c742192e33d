import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** CPU time used, in ms: this process's main thread, its other threads, and another process. */
export interface CpuTimes {
  mainThread: number;
  /** Worker threads, and V8's and libuv's helper threads. */
  otherThreads: number;
  /** The process watched beside this one (DynamoDB Local's JVM), if any. */
  watched?: number;
}

/**
 * Reads the CPU times from Linux's /proc, where the main thread's figures are apart from the
 * process's (its thread id is the process id); `undefined` without /proc (macOS, Windows).
 */
export function cpuTimes(watchedPid?: number): CpuTimes | undefined {
  try {
    const wholeProcess = ticksOf('/proc/self/stat');
    const mainThread = ticksOf(`/proc/self/task/${process.pid}/stat`);
    const ms = msPerTick();
    return {
      mainThread: mainThread * ms,
      otherThreads: (wholeProcess - mainThread) * ms,
      watched: watchedPid === undefined ? undefined : ticksOf(`/proc/${watchedPid}/stat`) * ms,
    };
  } catch {
    return undefined;
  }
}

/** The CPU used between two readings. */
export function cpuSince(before: CpuTimes, after: CpuTimes): CpuTimes {
  return {
    mainThread: after.mainThread - before.mainThread,
    otherThreads: after.otherThreads - before.otherThreads,
    watched:
      before.watched === undefined || after.watched === undefined
        ? undefined
        : after.watched - before.watched,
  };
}

/** User plus system time of a `stat` file, in clock ticks: fields 14 and 15, counted after the command name. */
function ticksOf(statFile: string): number {
  const stat = readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

let tickMs: number | undefined;

function msPerTick(): number {
  if (tickMs === undefined) {
    const { stdout } = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    tickMs = 1000 / (Number(stdout?.trim()) || 100);
  }
  return tickMs;
}

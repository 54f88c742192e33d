import { cpuTicksOf, msPerTick } from '../sandbox/thread-cpu.mjs';

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
    const wholeProcess = cpuTicksOf('/proc/self/stat');
    const mainThread = cpuTicksOf(`/proc/self/task/${process.pid}/stat`);
    const ms = msPerTick();
    return {
      mainThread: mainThread * ms,
      otherThreads: (wholeProcess - mainThread) * ms,
      watched: watchedPid === undefined ? undefined : cpuTicksOf(`/proc/${watchedPid}/stat`) * ms,
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

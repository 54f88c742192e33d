import { cpuTicksOf, msPerTick } from '../sandbox/thread-cpu.mjs';

/**
 * CPU time used, in ms: this process's main thread, its other threads, the function containers it
 * started (child processes), and another process.
 */
export interface CpuTimes {
  /** This process's main thread: in the benchmark, the SQS emulator, the pollers, the function runtimes' messaging. */
  mainThread: number;
  /** This process's other threads: V8's helper threads (its garbage collector's) and libuv's thread pool. */
  otherThreads: number;
  /**
   * The function containers, each a process of its own counted whole, every thread of it
   * (`LocalFunctionRuntime.processCpuMs()`), if given.
   */
  functions?: number;
  /** The process watched beside this one (DynamoDB Local's JVM), if any. */
  watched?: number;
}

/**
 * Reads this process's CPU times from Linux's /proc, where the main thread's figures are apart from
 * the process's (its thread id is the process id), and the watched process's; `functionsMs`, the
 * containers' CPU so far, is passed through. `undefined` without /proc (macOS, Windows).
 */
export function cpuTimes(watchedPid?: number, functionsMs?: number): CpuTimes | undefined {
  try {
    const wholeProcess = cpuTicksOf('/proc/self/stat');
    const mainThread = cpuTicksOf(`/proc/self/task/${process.pid}/stat`);
    const ms = msPerTick();
    return {
      mainThread: mainThread * ms,
      otherThreads: (wholeProcess - mainThread) * ms,
      functions: functionsMs,
      watched: watchedPid === undefined ? undefined : cpuTicksOf(`/proc/${watchedPid}/stat`) * ms,
    };
  } catch {
    return undefined;
  }
}

/** The CPU used between two readings. */
export function cpuSince(before: CpuTimes, after: CpuTimes): CpuTimes {
  const since = (part: 'functions' | 'watched') => {
    const [from, to] = [before[part], after[part]];
    return from === undefined || to === undefined ? undefined : to - from;
  };
  return {
    mainThread: after.mainThread - before.mainThread,
    otherThreads: after.otherThreads - before.otherThreads,
    functions: since('functions'),
    watched: since('watched'),
  };
}

import type { ChildProcess } from 'node:child_process';

const liveGroups = new Set<number>();
let hooksInstalled = false;

/** Sends `signal` to the whole process group led by `pid` (a detached child and everything it started). */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/**
 * Last-resort cleanup: if this process exits or is interrupted while groups are alive, kill them,
 * so an interrupted test run or sandbox never leaves a JVM behind. Signals are re-raised after the
 * cleanup so the default (or another listener's) behaviour still happens.
 */
function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', () => {
    for (const pid of liveGroups) signalGroup(pid, 'SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      for (const pid of liveGroups) signalGroup(pid, 'SIGKILL');
      liveGroups.clear();
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}

/** Tracks a child spawned with `detached: true` so that it and its descendants can be stopped together. */
export function trackProcessGroup(child: ChildProcess): {
  pid: number;
  stop: (graceMs?: number) => Promise<void>;
} {
  const pid = child.pid;
  if (pid === undefined) throw new Error('the child process has no pid: it failed to spawn');
  installHooks();
  liveGroups.add(pid);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

  return {
    pid,
    async stop(graceMs = 5_000) {
      signalGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      // The leader may exit before its descendants: make sure none survive it.
      signalGroup(pid, 'SIGKILL');
      liveGroups.delete(pid);
    },
  };
}

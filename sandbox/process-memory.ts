import { readFileSync } from 'node:fs';

/**
 * A process's resident memory in bytes, from Linux's /proc (`VmRSS`); `undefined` where there is no
 * /proc or the process is gone. The sandbox reads it for DynamoDB Local's JVM, a child process whose
 * heap no Node API reports.
 */
export function residentBytes(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

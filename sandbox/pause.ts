import { setTimeout as sleep } from 'node:timers/promises';

/** Waits `ms`, or less when `signal` aborts first: a poller's wait that never delays its stop. */
export async function pause(ms: number, signal: AbortSignal): Promise<void> {
  await sleep(Math.max(0, ms), undefined, { signal }).catch(() => undefined);
}

import { type MemoryGrowth, memoryGrowth } from './samples.js';
import type { SoakOptions, SoakResult } from './soak-run.js';

/** What a run must reach to count at its size. */
export interface SoakMinimum {
  /** Distinct keys accepted, the stock load included. */
  messages: number;
  groups: number;
  /** From the producers' start until the queue and the outbox were empty. */
  seconds: number;
  /** Producing shorter than this, memory growth cannot be told from warm-up: it is reported, not judged. */
  memoryJudgedFromSeconds: number;
}

type RunSize = Omit<SoakOptions, 'seed' | 'print'>;

/** The full soak (the size) and the quick one `npm test` runs. */
export const SOAK_SIZES: Record<'full' | 'quick', { run: RunSize; minimum: SoakMinimum }> = {
  full: {
    // 105 a second for 100,000 messages: about 16 minutes of producing, if the pipeline keeps up.
    run: {
      messages: 100_000,
      groups: 5_000,
      outboxShare: 0.15,
      poisonEvery: 2_000,
      ratePerSecond: 105,
      maxQueued: 3_000,
      sampleEveryMs: 5_000,
      settleTimeoutMs: 300_000,
    },
    minimum: { messages: 100_000, groups: 5_000, seconds: 15 * 60, memoryJudgedFromSeconds: 300 },
  },
  quick: {
    // Small enough that a busy 2-core machine settles it well inside npm test's bound: 1,500
    // messages (10 a group, as the full run) at 50 a second, 30 s of producing, with every kind of
    // trouble still met (poison messages, republished and late ones, hangs, faults).
    run: {
      messages: 1_500,
      groups: 150,
      outboxShare: 0.15,
      poisonEvery: 375,
      ratePerSecond: 50,
      maxQueued: 750,
      sampleEveryMs: 2_000,
      settleTimeoutMs: 240_000,
    },
    minimum: { messages: 1_500, groups: 150, seconds: 25, memoryJudgedFromSeconds: 300 },
  },
};

/** The share of the outbox's messages the relay must send (the sweeper is the backstop). */
export const MIN_RELAYED_SHARE = 0.95;
/** The name of the check of that share: a measure a busy machine moves, so the quick soak in `npm test` leaves it out. */
export const RELAYED_SHARE_CHECK = `the relay sent at least ${MIN_RELAYED_SHARE * 100} % of the outbox`;
export interface SoakJudgement {
  passed: boolean;
  checks: { name: string; ok: boolean; detail: string }[];
  memory: MemoryGrowth[];
  relayedShare: number;
}

export function judgeSoak(result: SoakResult, minimum: SoakMinimum): SoakJudgement {
  const memoryJudged = result.producingSeconds >= minimum.memoryJudgedFromSeconds;
  const memory = memoryGrowth(result.samples, result.producingSeconds);
  const { relayed, swept } = result.outbox;
  const relayedShare = relayed + swept === 0 ? 1 : relayed / (relayed + swept);
  const { violations } = result.verdict;
  const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  const checks = [
    {
      name: 'size',
      ok:
        result.accepted >= minimum.messages &&
        result.groups >= minimum.groups &&
        result.totalSeconds >= minimum.seconds,
      detail:
        `${result.accepted} messages over ${result.groups} groups in ${Math.round(result.totalSeconds)} s ` +
        `(at least ${minimum.messages}, ${minimum.groups}, ${minimum.seconds} s)`,
    },
    {
      name: 'every key: 0 lost, 0 effects twice, group order, every non-completed key explained',
      ok: violations.length === 0,
      detail:
        violations.length === 0
          ? `${result.verdict.keysChecked} keys checked`
          : `${violations.length} violations, first: ${violations.slice(0, 5).join('; ')}`,
    },
    {
      name: 'memory after warm-up within its bound',
      ok: !memoryJudged || memory.every((part) => part.endBytes <= part.boundBytes),
      detail:
        (memoryJudged
          ? ''
          : `not judged (${Math.round(result.producingSeconds)} s of producing; from ${minimum.memoryJudgedFromSeconds} s): `) +
        memory
          .map(
            (part) =>
              `${part.part} ${mib(part.afterWarmUpBytes)} → ${mib(part.endBytes)} (≤ ${mib(part.boundBytes)})`,
          )
          .join('; '),
    },
    {
      name: RELAYED_SHARE_CHECK,
      ok: relayedShare >= MIN_RELAYED_SHARE && result.outbox.pending === 0,
      detail: `${relayed} relayed, ${swept} swept (${(relayedShare * 100).toFixed(1)} %), ${result.outbox.pending} pending`,
    },
  ];
  return { passed: checks.every((check) => check.ok), checks, memory, relayedShare };
}

import type { SandboxUsage } from '../sandbox/local-sandbox.js';

/** What the soak sees at one moment of its run. */
export interface Sample {
  /** Seconds since the producers started. */
  atSeconds: number;
  /** Keys published (or placed) so far. */
  published: number;
  /** Messages queued or in flight. */
  queued: number;
  /** OrderPlaced events waiting in the outbox. */
  outboxPending: number;
  /**
   * Each function's heap in use in V8's old generation: the largest of its running containers', in
   * bytes. The young generation's garbage swings by tens of MiB between collections and keeps nothing.
   */
  functionHeapBytes: Record<string, number>;
  dynamodbLocalResidentBytes: number | undefined;
  hostHeapUsedBytes: number;
}

export function sampleOf(
  at: Pick<Sample, 'atSeconds' | 'published' | 'queued' | 'outboxPending'>,
  usage: SandboxUsage,
): Sample {
  return {
    ...at,
    functionHeapBytes: Object.fromEntries(
      Object.entries(usage.functions)
        .filter(([, fn]) => fn.oldHeapUsedBytes.length > 0)
        .map(([name, fn]) => [name, Math.max(...fn.oldHeapUsedBytes)]),
    ),
    dynamodbLocalResidentBytes: usage.dynamodbLocalResidentBytes,
    hostHeapUsedBytes: usage.hostHeapUsedBytes,
  };
}

export interface MemoryGrowth {
  /** A function's name, or `DynamoDB Local (resident)` or `host heap (SQS emulator, pollers, the soak)`. */
  part: string;
  /** The series' floor over the second quarter of the producing phase, and over the last. */
  afterWarmUpBytes: number;
  endBytes: number;
  /** The most `endBytes` may be: beyond it, the part leaks. */
  boundBytes: number;
  /** How the bound is set, and why. */
  bound: string;
}

const MiB = 2 ** 20;
/** A function's floor may rise by this share, plus {@link FUNCTION_SLACK_BYTES}, and no more. */
const FUNCTION_GROWTH = 0.25;
const FUNCTION_SLACK_BYTES = 4 * MiB;
/** An emulator's growth per message in the last quarter may be this many times the third's, plus the slack. */
const EMULATOR_RATE_GROWTH = 1.5;
const EMULATOR_SLACK_BYTES = 16 * MiB;

/**
 * Memory after warm-up, from each series' floor over a quarter of the producing phase (its lowest
 * sample: what survives the garbage collector, not the sawtooth between collections). Warm-up is
 * the first quarter: caches filled, code compiled, heaps sized.
 *
 * - A function keeps nothing per message: its floor over the last quarter may be at most 25 %
 *   + 4 MiB above its floor over the second.
 * - The emulators keep every item, stream record and message they were given, so they grow with
 *   the messages, by design (DynamoDB Local's SQLite store lives outside the JVM's heap, in its
 *   resident memory). Storage grows linearly; a leak on top of it grows faster. So the growth per
 *   message published from the third quarter to the last may be at most 1.5 times that from the
 *   second to the third, + 16 MiB.
 */
export function memoryGrowth(samples: readonly Sample[], producingUntilSeconds: number): MemoryGrowth[] {
  const producing = samples.filter((sample) => sample.atSeconds <= producingUntilSeconds);
  const size = Math.max(1, Math.floor(producing.length / 4));
  const [, second, third, last] = [0, 1, 2, 3].map((q) =>
    q === 3 ? producing.slice(3 * size) : producing.slice(q * size, (q + 1) * size),
  ) as [Sample[], Sample[], Sample[], Sample[]];
  const floorOf = (quarter: Sample[], of: (sample: Sample) => number | undefined) => {
    const known = quarter.map(of).filter((value): value is number => value !== undefined);
    return known.length === 0 ? 0 : Math.min(...known);
  };
  const publishedAt = (quarter: Sample[]) => quarter[0]?.published ?? 0;
  const names = [...new Set(samples.flatMap((sample) => Object.keys(sample.functionHeapBytes)))];
  const growths: MemoryGrowth[] = names.map((name) => {
    const of = (sample: Sample) => sample.functionHeapBytes[name];
    const afterWarmUpBytes = floorOf(second, of);
    return {
      part: name,
      afterWarmUpBytes,
      endBytes: floorOf(last, of),
      boundBytes: afterWarmUpBytes * (1 + FUNCTION_GROWTH) + FUNCTION_SLACK_BYTES,
      bound: 'the floor after warm-up + 25 % + 4 MiB: a function keeps nothing per message',
    };
  });
  const emulator = (part: string, of: (sample: Sample) => number | undefined) => {
    const [atSecond, atThird, atLast] = [floorOf(second, of), floorOf(third, of), floorOf(last, of)];
    const earlyMessages = Math.max(1, publishedAt(third) - publishedAt(second));
    const perMessage = Math.max(0, atThird - atSecond) / earlyMessages;
    const lateMessages = publishedAt(last) - publishedAt(third);
    growths.push({
      part,
      afterWarmUpBytes: atSecond,
      endBytes: atLast,
      boundBytes: atThird + perMessage * EMULATOR_RATE_GROWTH * lateMessages + EMULATOR_SLACK_BYTES,
      bound:
        `${Math.round(perMessage)} bytes per message from the 2nd quarter to the 3rd; from the 3rd to the ` +
        'last at most 1.5× that + 16 MiB: it stores every message, a leak would grow faster',
    });
  };
  emulator('DynamoDB Local (resident)', (sample) => sample.dynamodbLocalResidentBytes);
  emulator('host heap (SQS emulator, pollers, the soak)', (sample) => sample.hostHeapUsedBytes);
  return growths;
}

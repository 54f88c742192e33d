import type { Profiler } from 'node:inspector';
import { Session } from 'node:inspector/promises';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where a profile's sample ran, by the script that defines the function on top of the stack. */
export const CODE_ORIGINS = {
  oncely: "Oncely's own code",
  sdk: 'AWS SDK',
  libraries: 'other libraries (Powertools, Middy, zod)',
  node: 'Node.js and V8 (built-ins, GC, the event loop)',
  application: "the business code and the benchmark's",
} as const;
export type CodeOrigin = keyof typeof CODE_ORIGINS;

/** The AWS SDK's packages: the clients, their Smithy runtime, and the hashing they sign with. */
const SDK_SCOPES = ['@aws-sdk', '@smithy', '@aws-crypto'];

/**
 * The origin of a script, from its URL. Oncely's own code is the package's modules under `lambdas/`
 * (compiled in `dist/lambdas/`, or the TypeScript sources that the benchmark's consumers import
 * directly), except the example shop under `lambdas/shop/`, which is business code.
 */
export function codeOrigin(url: string, projectRoot: string): CodeOrigin {
  if (url === '' || url.startsWith('node:')) return 'node';
  if (!url.startsWith('file:')) return 'application';
  const path = fileURLToPath(url);
  const modules = `${sep}node_modules${sep}`;
  const afterModules = path.lastIndexOf(modules);
  if (afterModules >= 0) {
    const scope = path.slice(afterModules + modules.length).split(sep)[0] ?? '';
    return SDK_SCOPES.includes(scope) ? 'sdk' : 'libraries';
  }
  const relative = path.startsWith(projectRoot + sep) ? path.slice(projectRoot.length + 1) : undefined;
  const inPackage = relative?.replace(/^dist[\\/]/, '');
  if (inPackage?.startsWith(`lambdas${sep}`) && !inPackage.startsWith(`lambdas${sep}shop${sep}`)) {
    return 'oncely';
  }
  return 'application';
}

/** A function's self time in a profile. */
export interface FunctionTime {
  name: string;
  /** Its script's path under the project, or its URL, and its line (1-based). */
  location: string;
  ms: number;
}

/** A profile's busy time by origin, in ms; idle time (the event loop waiting) left out. */
export interface ProfileAttribution {
  busyMs: Record<CodeOrigin, number>;
  /** The functions of `topOf`'s origin with the most self time, most first. */
  top: FunctionTime[];
}

/**
 * Samples the calling thread with V8's CPU profiler (`node:inspector`) while `run` runs, every
 * `intervalUs` microseconds. A run that throws leaves the profile unread: disconnecting stops it.
 */
export async function profileWhile<T>(
  intervalUs: number,
  run: () => Promise<T>,
): Promise<{ result: T; profile: Profiler.Profile }> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
    await session.post('Profiler.start');
    const result = await run();
    const { profile } = await session.post('Profiler.stop');
    return { result, profile };
  } finally {
    session.disconnect();
  }
}

/**
 * Adds up each sample's time (until the next sample) by the origin of the function it caught
 * running: its self time. A function V8 inlined into its caller counts as the caller's.
 */
export function attributeProfile(
  profile: Profiler.Profile,
  projectRoot: string,
  topOf: CodeOrigin,
  topCount: number,
): ProfileAttribution {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  let at = profile.startTime;
  const timestamps = deltas.map((delta) => {
    at += delta;
    return at;
  });
  samples.forEach((id, index) => {
    const until = timestamps[index + 1] ?? profile.endTime;
    const from = timestamps[index] ?? profile.startTime;
    selfMs.set(id, (selfMs.get(id) ?? 0) + Math.max(0, until - from) / 1000);
  });

  const busyMs = Object.fromEntries(Object.keys(CODE_ORIGINS).map((origin) => [origin, 0])) as Record<
    CodeOrigin,
    number
  >;
  const byFunction = new Map<string, FunctionTime>();
  for (const [id, ms] of selfMs) {
    const frame = nodes.get(id)?.callFrame;
    if (!frame || frame.functionName === '(idle)') continue;
    const origin = codeOrigin(frame.url, projectRoot);
    busyMs[origin] += ms;
    if (origin !== topOf) continue;
    const location = `${displayPath(frame.url, projectRoot)}:${frame.lineNumber + 1}`;
    const key = `${frame.functionName}@${location}`;
    const entry = byFunction.get(key) ?? { name: frame.functionName || '(anonymous)', location, ms: 0 };
    entry.ms += ms;
    byFunction.set(key, entry);
  }
  const top = [...byFunction.values()].sort((a, b) => b.ms - a.ms).slice(0, topCount);
  return { busyMs, top };
}

function displayPath(url: string, projectRoot: string): string {
  const prefix = `file://${projectRoot}/`;
  return url.startsWith(prefix) ? url.slice(prefix.length) : url;
}

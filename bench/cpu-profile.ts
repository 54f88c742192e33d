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
 * (compiled in `dist/lambdas/`, or their TypeScript sources), except the example shop under
 * `lambdas/shop/`, which is business code.
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

/** A function's self time in a profile, in samples. */
export interface FunctionSamples {
  name: string;
  /** Its script's path under the project, or its URL, and its line (1-based). */
  location: string;
  samples: number;
}

/** A profile's busy samples by origin; the idle ones (the event loop waiting) left out. */
export interface ProfileAttribution {
  samples: Record<CodeOrigin, number>;
  /** The wall time the busy samples span, in ms. */
  busyMs: number;
  /** The functions of `topOf`'s origin with the most self time, most first. */
  top: FunctionSamples[];
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
 * Counts the samples of `profiles` by the origin of the function each caught running: its self time. Each sample
 * counts once, however long since the one before: a thread descheduled on a busy machine takes one
 * sample late, which weighting by time would give the whole wait. A function V8 inlined into its
 * caller counts as the caller's.
 */
export function attributeProfiles(
  profiles: readonly Profiler.Profile[],
  projectRoot: string,
  topOf: CodeOrigin,
  topCount: number,
): ProfileAttribution {
  const samples = Object.fromEntries(Object.keys(CODE_ORIGINS).map((origin) => [origin, 0])) as Record<
    CodeOrigin,
    number
  >;
  const byFunction = new Map<string, FunctionSamples>();
  let busyUs = 0;
  for (const profile of profiles) {
    const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
    const deltas = profile.timeDeltas ?? [];
    (profile.samples ?? []).forEach((id, index) => {
      const frame = frames.get(id);
      if (!frame || frame.functionName === '(idle)') return;
      busyUs += deltas[index + 1] ?? 0;
      const origin = codeOrigin(frame.url, projectRoot);
      samples[origin]++;
      if (origin !== topOf) return;
      const location = `${displayPath(frame.url, projectRoot)}:${frame.lineNumber + 1}`;
      const key = `${frame.functionName}@${location}`;
      const entry = byFunction.get(key) ?? {
        name: frame.functionName || '(anonymous)',
        location,
        samples: 0,
      };
      entry.samples++;
      byFunction.set(key, entry);
    });
  }
  const top = [...byFunction.values()].sort((a, b) => b.samples - a.samples).slice(0, topCount);
  return { samples, busyMs: busyUs / 1000, top };
}

function displayPath(url: string, projectRoot: string): string {
  const prefix = `file://${projectRoot}/`;
  return url.startsWith(prefix) ? url.slice(prefix.length) : url;
}

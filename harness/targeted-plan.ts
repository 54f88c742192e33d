import type { ChaosRequest, Fault, FaultPlan } from './faults.js';
import { FaultPlanError } from './faults.js';
import { requestFingerprint } from './fingerprint.js';

export interface TargetedFaultOptions {
  /** Which requests may be the target, e.g. UpdateItems that write `IN_DOUBT`. */
  match: (request: ChaosRequest) => boolean;
  fault: Fault;
  /**
   * The target is the nth distinct matching request (1 by default). Distinct by fingerprint, so
   * the SDK's retries of the target are the target again, not the next match.
   */
  nth?: number;
  /** How many sends of the target get the fault: 1 hits its first try only; every one by default. */
  times?: number;
}

/** A plan that hits one request precisely, e.g. "the 1st IN_DOUBT write fails before it applies, always". */
export function targetedFaultPlan(options: TargetedFaultOptions): FaultPlan {
  const nth = options.nth ?? 1;
  const times = options.times ?? Number.POSITIVE_INFINITY;
  if (!Number.isInteger(nth) || nth < 1) throw new FaultPlanError(`nth must be an integer >= 1, got ${nth}`);
  if (!(times >= 1)) throw new FaultPlanError(`times must be >= 1, got ${times}`);
  const matched: string[] = [];
  let hits = 0;
  return (request) => {
    if (!options.match(request)) return undefined;
    const fingerprint = requestFingerprint(request);
    if (!matched.includes(fingerprint)) matched.push(fingerprint);
    if (matched[nth - 1] !== fingerprint || hits >= times) return undefined;
    hits += 1;
    return options.fault;
  };
}

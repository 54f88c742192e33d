import type { ChaosRequest, FaultPlan } from '../harness/faults.js';
import { type SeededFaultPlanOptions, seededFaultPlan } from '../harness/seeded-plan.js';

export interface FirstTryFaultPlanOptions extends SeededFaultPlanOptions {
  /**
   * What a request acts on, when the workload alone fixes it: one message's record, the messages of
   * a send. Empty for a request whose targets timing decides (a batch's joint write, a poll, a
   * receipt handle's delete), which never meets a fault.
   */
  subjects: (request: ChaosRequest) => readonly string[];
}

/**
 * Seeded faults whose number a seed fixes, however the requests interleave: a request may meet
 * one, decided as `seededFaultPlan` decides it, only if it is the first to name each of its
 * subjects — a message's first try; its retries and later steps never do.
 *
 * Why: in a whole pipeline, how often a request is sent again depends on timing — a batch a
 * crash took down comes back, a duplicate keeps its record alive, a schedule polls every few
 * seconds. A plan that drew a fault for every request would inject more faults in a slower run.
 * The first request naming a message is meant to happen once in every run, so that the faults
 * injected are a function of the seed and the workload (docs/faults.md says how far that holds).
 */
export function firstTryFaultPlan(options: FirstTryFaultPlanOptions): FaultPlan {
  const seeded = seededFaultPlan(options);
  const named = new Set<string>();
  return (request) => {
    const subjects = options.subjects(request);
    if (subjects.length === 0) return undefined;
    const first = subjects.every((subject) => !named.has(subject));
    for (const subject of subjects) named.add(subject);
    return first ? seeded(request) : undefined;
  };
}

import type { ChaosRequest, FaultPlan } from '../harness/faults.js';
import {
  faultDraw,
  type SeededFaultKind,
  type SeededFaultPlanOptions,
  seededFault,
} from '../harness/seeded-plan.js';

export interface SubjectFaultPlanOptions extends Pick<SeededFaultPlanOptions, 'seed' | 'rates' | 'delayMs'> {
  /**
   * What a request acts on: one message's record, the messages of a send. Empty for a request that
   * names no message (a poll, a receipt handle's delete, a read), which never meets a fault.
   */
  subjects: (request: ChaosRequest) => readonly string[];
}

/**
 * Seeded faults whose number a seed fixes, however the requests interleave (issue 40, item 18):
 * each subject draws its fault (or none) from the seed and its name alone, and its fault goes to
 * the first request naming it that carries no other subject's fault. A retry, a batch a crash
 * brought back, or a write naming two subjects (a group's joint write, whose members timing
 * decides) moves which request meets a fault, never how many: the faults injected are the faults
 * drawn, one per subject that drew one, as long as each such subject is named again after a
 * request naming it met another's — as a faulted request's retry names it again.
 *
 * Why: in a whole pipeline, how often a request is sent, and with what beside it, depends on
 * timing. A plan that drew a fault per request would inject more faults in a slower run, and one
 * that drew it for a subject's first request only would lose the draw when that request is a
 * joint one.
 */
export function subjectFaultPlan(options: SubjectFaultPlanOptions): FaultPlan & {
  /** The faults drawn and not yet met by a request: 0 at the end of a run that met them all. */
  readonly pending: () => number;
} {
  const draw = faultDraw(options);
  const drawn = new Set<string>();
  const pending = new Map<string, SeededFaultKind>();
  const plan = (request: ChaosRequest) => {
    const subjects = options.subjects(request);
    for (const subject of subjects) {
      if (drawn.has(subject)) continue;
      drawn.add(subject);
      const kind = draw(subject);
      if (kind) pending.set(subject, kind);
    }
    for (const subject of subjects) {
      const kind = pending.get(subject);
      const fault = kind && seededFault(kind, request, options.delayMs);
      if (!fault) continue;
      pending.delete(subject);
      return fault;
    }
    return undefined;
  };
  return Object.assign(plan, { pending: () => pending.size });
}

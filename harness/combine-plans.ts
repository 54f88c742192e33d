import type { FaultPlan } from './faults.js';

/**
 * Several plans at once, e.g. seeded noise plus one targeted fault: the first plan's fault wins.
 * Every plan sees every request, so each one's counts stay what they would be alone.
 */
export function combinePlans(...plans: FaultPlan[]): FaultPlan {
  return (request) => plans.map((plan) => plan(request)).find((fault) => fault !== undefined);
}

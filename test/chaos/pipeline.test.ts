import { beforeAll, describe, expect, it } from 'vitest';
import { type PipelineChaosReport, runPipelineChaos } from '../../chaos/pipeline-run.js';
import { sharedAssembly } from '../support/shared-assembly.js';

// The whole pipeline in its own sandbox under faults — `npm run chaos` runs a larger one.

const SEED = 3;
// A generous settle bound: on a busy machine many invocations die of their 2 s timeout.
const run = async () =>
  runPipelineChaos({
    seed: SEED,
    customers: 8,
    ordersPerCustomer: 5,
    settleTimeoutMs: 300_000,
    cloudAssembly: await sharedAssembly('.'),
  });

describe('the whole pipeline in the sandbox, under faults', () => {
  let report: PipelineChaosReport;
  // A bound, not a measure: a run takes about 30 s alone and several minutes on a busy machine.
  beforeAll(async () => {
    report = await run();
  }, 600_000);

  it('loses nothing, applies nothing twice and parks nothing needlessly', () => {
    expect(report.violations).toEqual([]);
    expect(report.needlessInDoubt).toBe(0);
    expect(report.keysChecked).toBeGreaterThan(40);
    // It did meet trouble: faults of each seeded kind, and invocations that died holding a request.
    expect(report.faults['fail-before'] + report.faults['lose-answer']).toBeGreaterThan(0);
    expect(report.faults.hang).toBeGreaterThan(0);
    // Every fault the seed drew met a request, so the seed alone fixes the faults (docs/faults.md).
    expect(report.faultsNotMet).toBe(0);
    expect(report.crashes).toBeGreaterThan(0);
  });

  it('dead-letters the intended poison messages and nothing else', () => {
    expect(report.deadLetterCauses).toEqual({ intended: 2, businessRule: [], other: [] });
  });
});

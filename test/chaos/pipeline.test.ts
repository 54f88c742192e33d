import { beforeAll, describe, expect, it } from 'vitest';
import { type PipelineChaosReport, runPipelineChaos } from '../../chaos/pipeline-run.js';

// The whole pipeline in its own sandbox under faults — `npm run chaos` runs a larger one. Run twice
// with one seed: what the seed decides must come out the same.

const SEED = 3;
// A generous settle bound: on a busy machine many invocations die of their 2 s timeout.
const run = () =>
  runPipelineChaos({ seed: SEED, customers: 8, ordersPerCustomer: 5, settleTimeoutMs: 300_000 });

describe('the whole pipeline in the sandbox, under faults', () => {
  let first: PipelineChaosReport;
  let second: PipelineChaosReport;
  // A bound, not a measure: a run takes about 30 s alone and several minutes on a busy machine.
  beforeAll(async () => {
    first = await run();
    second = await run();
  }, 1_200_000);

  it('loses nothing, applies nothing twice and parks nothing needlessly', () => {
    for (const report of [first, second]) {
      expect(report.violations).toEqual([]);
      expect(report.needlessInDoubt).toBe(0);
      expect(report.keysChecked).toBeGreaterThan(40);
      // It did meet trouble: faults of each seeded kind, and invocations that died holding a request.
      expect(report.faults['fail-before'] + report.faults['lose-answer']).toBeGreaterThan(0);
      expect(report.faults.hang).toBeGreaterThan(0);
      expect(report.crashes).toBeGreaterThan(0);
    }
  });

  it('dead-letters the intended poison messages and nothing else', () => {
    for (const report of [first, second]) {
      expect(report.deadLetterCauses).toEqual({ intended: 2, businessRule: [], other: [] });
    }
  });

  // The seed fixes the workload. The seeded faults are drawn per message, on its first request, yet
  // their count still moves by a few between runs (docs/faults.md): not compared, nor what timing
  // moves (invocations that died, IN_DOUBT records, the time).
  it('publishes the same workload for one seed', () => {
    const workload = (report: PipelineChaosReport) => ({
      published: report.published,
      keysChecked: report.keysChecked,
    });
    expect(workload(second)).toEqual(workload(first));
  });
});

import { describe, expect, it } from 'vitest';
import { runPipelineChaos } from '../../chaos/pipeline-run.js';

// The whole pipeline in its own sandbox under faults — `npm run chaos` runs a larger one.

describe('the whole pipeline in the sandbox, under faults', () => {
  it('loses nothing, applies nothing twice and parks nothing needlessly', { timeout: 180_000 }, async () => {
    const report = await runPipelineChaos({ seed: 3, customers: 8, ordersPerCustomer: 5 });
    expect(report.violations).toEqual([]);
    expect(report.needlessInDoubt).toBe(0);
    expect(report.keysChecked).toBeGreaterThan(40);
    // It did meet trouble: faults of each seeded kind, and invocations that died holding a request.
    expect(report.faults['fail-before'] + report.faults['lose-answer']).toBeGreaterThan(0);
    expect(report.faults.hang).toBeGreaterThan(0);
    expect(report.crashes).toBeGreaterThan(0);
  });
});

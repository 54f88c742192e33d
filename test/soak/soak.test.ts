import { describe, expect, it } from 'vitest';
import { judgeSoak, RELAYED_SHARE_CHECK, SOAK_SIZES } from '../../soak/soak-judgement.js';
import { runSoak } from '../../soak/soak-run.js';
import { sharedAssembly } from '../support/shared-assembly.js';

// `npm run soak -- --quick`: the soak's whole path at a minute's size (the full run is its own
// command; its figures are in bench/SOAK.md).

describe('the soak, quick', () => {
  it('carries every message once, in group order, the outbox emptied by its relay and sweeper, under faults', {
    timeout: 600_000,
  }, async () => {
    const { run, minimum } = SOAK_SIZES.quick;
    const result = await runSoak({ ...run, seed: 7, cloudAssembly: await sharedAssembly('.') });
    const judgement = judgeSoak(result, minimum);

    expect(result.verdict.violations).toEqual([]);
    // Every check but the relay's share: how much the sweeper takes over is how far the relay lags,
    // which a busy machine moves (the full soak judges it). Here: the relay carried some, and the
    // outbox was emptied.
    const judgedHere = judgement.checks.filter((check) => check.name !== RELAYED_SHARE_CHECK);
    expect(judgedHere).toHaveLength(judgement.checks.length - 1);
    expect(judgedHere.filter((check) => !check.ok)).toEqual([]);
    expect(result.accepted).toBeGreaterThanOrEqual(minimum.messages);
    expect(result.outbox.relayed).toBeGreaterThan(0);
    expect(result.outbox.pending).toBe(0);
    // It met what it is for: faults, dead invocations, duplicates, re-sends after the window, poison.
    expect(
      result.faults['fail-before'] + result.faults['lose-answer'] + result.faults.throttle,
    ).toBeGreaterThan(0);
    expect(result.faults.hang).toBeGreaterThan(0);
    expect(result.crashes).toBeGreaterThan(0);
    expect(result.producers.republished).toBeGreaterThan(0);
    expect(result.producers.late).toBeGreaterThan(0);
    expect(result.producers.repeatsRefused).toBeGreaterThan(0);
    expect(result.verdict.deadLettered).toBeGreaterThan(0);
    // Memory was sampled for every function that ran, and for DynamoDB Local's JVM.
    const sampled = new Set(result.samples.flatMap((sample) => Object.keys(sample.functionHeapBytes)));
    const ran = Object.entries(result.functions).filter(([, usage]) => usage.invocations > 0);
    expect(ran.length).toBeGreaterThanOrEqual(4);
    for (const [name] of ran) expect(sampled).toContain(name);
    expect(result.samples.every((sample) => (sample.dynamodbLocalResidentBytes ?? 0) > 0)).toBe(true);
  });
});

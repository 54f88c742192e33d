import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { BenchEndpoints } from '../../bench/clients.js';
import { measureTracingCost } from '../../bench/tracing/measure.js';
import { tracingSection } from '../../bench/tracing/report.js';
import { tracingVerdicts } from '../../bench/tracing/targets.js';
import { TRACING_VARIANTS } from '../../bench/tracing/variants.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// `npm run bench -- --only tracing` (5c) in a tiny configuration, so that a broken benchmark fails here rather than
// on the day someone runs it. The figures are only checked to be there: they are the benchmark's to
// report. Its "before" package is HEAD's here, which any clone has.

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the tracing benchmark, in miniature', () => {
  let endpoints: BenchEndpoints;
  beforeAll(() => {
    endpoints = { dynamodb: emulatorEndpoint('dynamodbEndpoint'), sqs: emulatorEndpoint('sqsEndpoint') };
  });

  it('runs every variant in its own process, builds both bundles, and reports them', {
    timeout: 240_000,
  }, async () => {
    const options = { rounds: 1, messages: 20, startUpRuns: 1, earlierCommit: 'HEAD' };
    const cost = await measureTracingCost(endpoints, { ...options, projectRoot: PROJECT_ROOT });
    expect(cost.variants.map(({ variant }) => variant)).toEqual([...TRACING_VARIANTS]);
    // Only the SDK makes spans: one per record.
    expect(cost.variants.map(({ spansPerMessage }) => spansPerMessage)).toEqual([0, 0, 0, 1]);
    expect(cost.variants.every(({ cpuMsPerMessage }) => cpuMsPerMessage.median > 0)).toBe(true);
    const [without, withApi] = cost.bundles;
    expect(withApi?.minifiedBytes).toBeGreaterThan(without?.minifiedBytes ?? Number.POSITIVE_INFINITY);
    expect(tracingSection(cost, options)).toMatch(/^## 5c\. The cost of tracing/);
    // Three targets, each judged on a figure the run measured.
    const verdicts = tracingVerdicts(cost);
    expect(verdicts).toHaveLength(3);
    expect(verdicts.every(({ measured }) => measured.endsWith(' more'))).toBe(true);
  });
});

import type { Profiler } from 'node:inspector';
import { describe, expect, it } from 'vitest';
import { attributeProfiles, codeOrigin } from '../../bench/cpu-profile.js';

const ROOT = '/project';

describe("the profile's attribution by origin", () => {
  it('tells Oncely’s modules from the SDK, other libraries, Node and the business code', () => {
    expect(
      [
        'file:///project/dist/lambdas/consumer/fifo-batch.js',
        'file:///project/lambdas/idempotency/store.ts',
        'file:///project/dist/lambdas/shop/consumer/ledger.js',
        'file:///project/bench/own-cpu.ts',
        'file:///project/node_modules/@smithy/core/dist-cjs/index.js',
        'file:///project/node_modules/@aws-sdk/util-dynamodb/dist-cjs/index.js',
        'file:///project/node_modules/@aws-crypto/sha256-js/build/main/index.js',
        'file:///project/node_modules/@middy/core/index.js',
        'node:internal/streams/readable',
        '',
      ].map((url) => codeOrigin(url, ROOT)),
    ).toEqual([
      'oncely',
      'oncely',
      'application',
      'application',
      'sdk',
      'sdk',
      'sdk',
      'libraries',
      'node',
      'node',
    ]);
  });

  it('counts each busy sample once for its function, the idle ones left out', () => {
    const frame = (functionName: string, url: string, lineNumber = 0) => ({
      functionName,
      url,
      lineNumber,
      columnNumber: 0,
      scriptId: '0',
    });
    const profile: Profiler.Profile = {
      nodes: [
        { id: 1, callFrame: frame('(root)', '') },
        { id: 2, callFrame: frame('(idle)', '') },
        { id: 3, callFrame: frame('acquire', 'file:///project/dist/lambdas/idempotency/store.js', 55) },
        { id: 4, callFrame: frame('send', 'file:///project/node_modules/@smithy/core/index.js') },
      ],
      startTime: 0,
      endTime: 1_000,
      samples: [2, 3, 4, 3, 2, 2],
      timeDeltas: [0, 100, 100, 5_000, 100, 100],
    };
    const { samples, busyMs, top } = attributeProfiles([profile, profile], ROOT, 'oncely', 5);
    expect(samples).toEqual({ oncely: 4, sdk: 2, libraries: 0, node: 0, application: 0 });
    // A late sample (descheduled for 5 ms) still counts once; the wall time it spans is kept apart.
    expect(busyMs).toBeCloseTo(2 * 5.2);
    expect(top).toEqual([{ name: 'acquire', location: 'dist/lambdas/idempotency/store.js:56', samples: 4 }]);
  });
});

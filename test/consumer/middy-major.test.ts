import middy from '@middy/core';
import middyFloor from '@middy/core-floor';
import { describe, expect, it } from 'vitest';

// vitest.config.ts runs the consumer's Middy suites twice: against the Middy the repository
// develops on and, in the `middy-floor` project, against the oldest major of the peer range.
// This checks that each project really loads the Middy it claims to.

describe('the Middy the consumer suites run against', () => {
  it('is Middy 6 (the alias) in the middy-floor project, the newest major elsewhere', async ({ task }) => {
    const floorProject = task.file.projectName === 'middy-floor';
    expect(middy === middyFloor).toBe(floorProject);
    const newest = await import('../../node_modules/@middy/core/index.js');
    expect(middy === newest.default).toBe(!floorProject);
  });
});

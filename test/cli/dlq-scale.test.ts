import { describe, expect, it } from 'vitest';
import { runDlqScale } from '../../bench/dlq-scale.js';

// The scale part of issue 31, smaller: 1,000 DLQ messages over 50 groups, on the emulator with one
// group per receive. `npm run bench:dlq` runs 10,000 over 500; its figures are in docs/operations.md.

describe('dlq redrive and list at scale', () => {
  it('moves 1,000 messages over 50 groups, each once and each group in order; lists the first 10 of each group', async () => {
    const result = await runDlqScale(1_000, 50);
    console.log(`dlq scale, 1,000 over 50 groups: ${JSON.stringify(result)}`);
    expect(result).toMatchObject({
      complete: true,
      redrive: { moved: 1_000, finished: true },
      // A FIFO receive reaches a group's first 10: the listing says the other 10 of each are left.
      list: { listed: 500, end: 'blocked', left: 500 },
    });
    // A receive brings one group: a send per message (one message of a group per call), a delete per 10.
    expect(result.redrive.requests.SendMessageBatchCommand).toBe(1_000);
    expect(result.redrive.requests.DeleteMessageBatchCommand).toBe(100);
    expect(result.redrive.requests.SendMessageCommand).toBeUndefined();
  });
});

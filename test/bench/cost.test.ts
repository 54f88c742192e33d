import { describe, expect, it } from 'vitest';
import type { BilledUsage } from '../../bench/billed-usage.js';
import {
  billedSqsRequests,
  costOfModes,
  costPerMillionMessages,
  PRICES,
  sqsCallsPerMessage,
} from '../../bench/cost.js';
import type { PublisherCost } from '../../bench/publisher-calls.js';

const spread = (median: number) => ({ samples: 1, median, p10: median, p90: median });

describe('the cost of a million messages', () => {
  it('adds up what each message uses at the published prices', () => {
    const cost = costPerMillionMessages({
      dynamodbWriteUnits: 4,
      dynamodbReadUnits: 0.5,
      sqsRequests: 0.3,
      lambdaInvocations: 0.1,
      lambdaBilledMsPerInvocation: 95,
      lambdaMemoryMiB: 512,
    });
    // 4 × $0.625; 0.5 × $0.125; 0.3 × $0.50; 0.1 × $0.20; 100,000 invocations × 0.095 s × 0.5 GB × $0.0000133334.
    expect(cost.dynamodbWrites).toBeCloseTo(2.5, 10);
    expect(cost.dynamodbReads).toBeCloseTo(0.0625, 10);
    expect(cost.sqs).toBeCloseTo(0.15, 10);
    expect(cost.lambdaRequests).toBeCloseTo(0.02, 10);
    expect(cost.lambdaDuration).toBeCloseTo(0.06333365, 10);
    expect(cost.total).toBeCloseTo(2.79583365, 10);
  });

  it("prices a standard queue's SQS requests at the standard rate", () => {
    const usage = {
      dynamodbWriteUnits: 0,
      dynamodbReadUnits: 0,
      sqsRequests: 0.3,
      lambdaInvocations: 0,
      lambdaBilledMsPerInvocation: 0,
      lambdaMemoryMiB: 512,
    };
    // 0.3 × $0.40 on a standard queue, against 0.3 × $0.50 on FIFO.
    expect(costPerMillionMessages({ ...usage, queueType: 'standard' }).sqs).toBeCloseTo(0.12, 10);
    expect(costPerMillionMessages(usage).sqs).toBeCloseTo(0.15, 10);
  });

  it('bills Lambda by the started millisecond and SQS by the started 64 KB chunk', () => {
    const usage = {
      dynamodbWriteUnits: 0,
      dynamodbReadUnits: 0,
      sqsRequests: 0,
      lambdaInvocations: 1,
      lambdaMemoryMiB: 1024,
    };
    const at = (ms: number) => costPerMillionMessages({ ...usage, lambdaBilledMsPerInvocation: ms });
    expect(at(10.2).lambdaDuration).toBeCloseTo(at(11).lambdaDuration, 10);
    expect(at(11).lambdaDuration).toBeCloseTo(1e6 * 0.011 * PRICES.lambdaArmPerGbSecond, 10);
    expect(billedSqsRequests(0.1, 1_730)).toBeCloseTo(0.1, 10);
    expect(billedSqsRequests(0.1, 64 * 1024 + 1)).toBeCloseTo(0.2, 10);
  });

  it("takes the SQS calls from the publisher's sends and the event source's receives and deletes", () => {
    const publisher = [
      { sender: 'naive', messages: 1_000, addedLatencyMs: 0, sqsCalls: 1_000 },
      { sender: 'publisher', messages: 1_000, addedLatencyMs: 0, sqsCalls: 100 },
    ] as PublisherCost[];
    const calls = sqsCallsPerMessage(publisher, [
      { batches: 60, emptyReceives: 40, deleteBatches: 60, messages: 600 },
      { batches: 60, emptyReceives: 3, deleteBatches: 60, messages: 600 },
    ]);
    expect(calls).toEqual({ sendMessageBatch: 0.1, receiveMessage: 0.1, deleteMessageBatch: 0.1 });

    const measured: BilledUsage = {
      mode: 'transactional',
      groups: 10,
      dynamodbRequestsPerRecord: 1,
      writeUnitsPerRecord: 4,
      readUnitsPerRecord: 0,
      batchMs: spread(94.2),
      bodyBytes: 173,
    };
    const [row] = costOfModes([measured], calls, 512);
    expect(row?.usage).toMatchObject({
      dynamodbWriteUnits: 4,
      dynamodbReadUnits: 0,
      lambdaInvocations: 0.1,
      lambdaBilledMsPerInvocation: 95,
      lambdaMemoryMiB: 512,
    });
    // A send and a receive of ten 173-byte bodies fit one 64 KB chunk each; a delete carries none.
    expect(row?.usage.sqsRequests).toBeCloseTo(0.3, 10);
    expect(row?.cost.total).toBeCloseTo(2.5 + 0.15 + 0.02 + 0.06333365, 10);
  });
});

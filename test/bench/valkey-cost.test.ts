import { describe, expect, it } from 'vitest';
import { PRICES } from '../../bench/cost.js';
import {
  breakEven,
  type DynamoDbUsage,
  dynamodbMonthlyCost,
  ecpusPerScript,
  GB,
  longestBreakEvenRecordHours,
  VALKEY_PRICES,
  type ValkeyUsage,
  valkeyMonthlyCost,
} from '../../bench/valkey-cost.js';

const dynamodb: DynamoDbUsage = {
  writeUnits: 2,
  readUnits: 0,
  storedBytesPerRecord: 500,
  lambdaMsPerMessage: 10,
};
const valkey: ValkeyUsage = { ecpus: 8, storedBytesPerRecord: 700, lambdaMsPerMessage: 3 };
const memory = 512;
const lambdaPerMessage = (ms: number) => (ms / 1000) * 0.5 * PRICES.lambdaArmPerGbSecond;
// A key lives its record's lifetime and the hour of grace; a month is 730 hours.
const valkeyStoragePerMessage = (bytes: number, hours: number) =>
  ((hours + 1) / 730) * (bytes / GB) * VALKEY_PRICES.elasticacheValkeyPerGbHour * 730;
// One SQS interface endpoint in 2 AZs at $0.01 an hour, 730 hours.
const ENDPOINTS = 14.6;
// 100 MB at $0.084 a GB-hour, 730 hours.
const MINIMUM_STORAGE = 0.1 * 0.084 * 730;

describe('lease records in Valkey against DynamoDB, a month at published prices', () => {
  it('bills DynamoDB its units, its storage while records live, and the Lambda time', () => {
    const month = dynamodbMonthlyCost(1e6, dynamodb, { recordHours: 730, lambdaMemoryMiB: memory });
    expect(month.requests).toBeCloseTo(2 * 0.625, 10);
    // A month's records, each 500 bytes, at $0.25 a GB-month.
    expect(month.storage).toBeCloseTo(((1e6 * 500) / GB) * 0.25, 10);
    expect(month.lambda).toBeCloseTo(1e6 * lambdaPerMessage(10), 10);
    expect(month.fixed).toBe(0);
    expect(month.total).toBeCloseTo(month.requests + month.storage + month.lambda, 10);
  });

  it('bills Valkey its ECPUs, its data stored (at least 100 MB), the Lambda time and the VPC endpoints', () => {
    const assumptions = { recordHours: 456, lambdaMemoryMiB: memory };
    const idle = valkeyMonthlyCost(0, valkey, assumptions);
    expect(idle.storage).toBeCloseTo(MINIMUM_STORAGE, 10);
    expect(idle.fixed).toBeCloseTo(ENDPOINTS, 10);
    expect(idle.total).toBeCloseTo(MINIMUM_STORAGE + ENDPOINTS, 10);

    const busy = valkeyMonthlyCost(1e6, valkey, assumptions);
    expect(busy.requests).toBeCloseTo(8 * 0.0023, 10);
    expect(busy.storage).toBeCloseTo(1e6 * valkeyStoragePerMessage(700, 456), 6);
    expect(busy.storage).toBeGreaterThan(MINIMUM_STORAGE);
    expect(busy.lambda).toBeCloseTo(1e6 * lambdaPerMessage(3), 10);
  });

  it('never breaks even when each message costs Valkey more to keep than DynamoDB to write', () => {
    // 19 days: a 700-byte key at $0.084 a GB-hour costs some $0.000025, against $0.00000125 of writes.
    const assumptions = { recordHours: 19 * 24, lambdaMemoryMiB: memory };
    expect(breakEven(valkey, dynamodb, assumptions)).toEqual({ kind: 'never' });
  });

  it('breaks even where the fixed costs are paid back, past the storage minimum', () => {
    // Large records kept two hours: storage passes 100 MB at some 5 million messages a month, and
    // each message still costs Valkey less than DynamoDB.
    const large: ValkeyUsage = { ...valkey, storedBytesPerRecord: 5_000 };
    const assumptions = { recordHours: 2, lambdaMemoryMiB: memory };
    const result = breakEven(large, dynamodb, assumptions);
    expect(result.kind).toBe('above');
    if (result.kind !== 'above') return;
    const at = (rate: number) =>
      valkeyMonthlyCost(rate, large, assumptions).total -
      dynamodbMonthlyCost(rate, dynamodb, assumptions).total;
    expect(at(result.messagesPerMonth)).toBeCloseTo(0, 6);
    expect(at(result.messagesPerMonth * 0.9)).toBeGreaterThan(0);
    expect(at(result.messagesPerMonth * 1.1)).toBeLessThan(0);
    // By hand: per message DynamoDB $1.25e-6 + storage + Lambda; Valkey ECPUs + storage + Lambda.
    const perDynamoDb = 2 * 0.625e-6 + (2 / 730) * (500 / GB) * 0.25 + lambdaPerMessage(10);
    const perValkey = 8 * 0.0023e-6 + valkeyStoragePerMessage(5_000, 2) + lambdaPerMessage(3);
    const crossing = ENDPOINTS / (perDynamoDb - perValkey);
    expect(result.messagesPerMonth).toBeCloseTo(crossing, 0);
    // Past the minimum: its records then hold more than 100 MB.
    expect(crossing * (3 / 730) * (5_000 / GB)).toBeGreaterThan(0.1);
  });

  it('breaks even below the storage minimum when the fixed costs are paid back before it is passed', () => {
    // Records that take almost nothing: the minimum is the storage bill up to a very high rate.
    const tiny: ValkeyUsage = { ...valkey, storedBytesPerRecord: 0.001 };
    const assumptions = { recordHours: 1, lambdaMemoryMiB: memory };
    const result = breakEven(tiny, dynamodb, assumptions);
    expect(result.kind).toBe('above');
    if (result.kind !== 'above') return;
    const perDynamoDb = dynamodbMonthlyCost(1e6, dynamodb, assumptions).total / 1e6;
    const perValkey = 8 * 0.0023e-6 + lambdaPerMessage(3);
    expect(result.messagesPerMonth).toBeCloseTo((ENDPOINTS + MINIMUM_STORAGE) / (perDynamoDb - perValkey), 0);
  });

  it('finds the longest record lifetime at which some rate breaks even', () => {
    const hours = longestBreakEvenRecordHours(valkey, dynamodb, memory) as number;
    expect(hours).toBeGreaterThan(0);
    expect(breakEven(valkey, dynamodb, { recordHours: hours * 0.95, lambdaMemoryMiB: memory }).kind).toBe(
      'above',
    );
    expect(breakEven(valkey, dynamodb, { recordHours: hours * 1.05, lambdaMemoryMiB: memory }).kind).toBe(
      'never',
    );
    // Valkey's ECPUs and Lambda time alone costing more: no lifetime is short enough.
    expect(longestBreakEvenRecordHours({ ...valkey, ecpus: 1e4 }, dynamodb, memory)).toBeUndefined();
  });

  it('bills a script the higher of its KB and its CPU against a 1 KB SET, at least 1 ECPU', () => {
    expect(ecpusPerScript({ bytes: 700, serverCpuMicros: 40, baselineCpuMicros: 10 })).toBeCloseTo(4, 10);
    expect(ecpusPerScript({ bytes: 5 * 1024, serverCpuMicros: 20, baselineCpuMicros: 10 })).toBeCloseTo(
      5,
      10,
    );
    expect(ecpusPerScript({ bytes: 100, serverCpuMicros: 5, baselineCpuMicros: 10 })).toBe(1);
  });
});

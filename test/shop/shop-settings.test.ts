import { RemovalPolicy } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { PLACEHOLDER_NOTIFICATION_URL, shopSettingsFromContext } from '../../lib/shop/shop-settings.js';

const from = (context: Record<string, unknown>) => shopSettingsFromContext((key) => context[key]);

describe('the shop’s settings from CDK context', () => {
  it('reads numbers and durations given as strings on the command line', () => {
    const { pipeline } = from({
      maxReceiveCount: '3',
      consumerTimeoutSeconds: '20',
      idempotencyTtlDays: '30',
      unresolvedCheckIntervalMinutes: '15',
    });
    expect(pipeline.maxReceiveCount).toBe(3);
    expect(pipeline.consumerTimeout?.toSeconds()).toBe(20);
    expect(pipeline.idempotencyTtl?.toDays()).toBe(30);
    expect(pipeline.unresolvedCheckInterval?.toMinutes()).toBe(15);
    expect(pipeline.batchSize).toBeUndefined();
  });

  it('keeps prod data and protects it; tears other stages down', () => {
    expect(from({ stage: 'prod' }).pipeline).toMatchObject({
      removalPolicy: RemovalPolicy.RETAIN,
      deletionProtection: true,
    });
    expect(from({}).pipeline).toMatchObject({
      removalPolicy: RemovalPolicy.DESTROY,
      deletionProtection: false,
    });
    expect(from({}).stage).toBe('dev');
  });

  it('inside `oncely local`, defaults to a local stage with a short consumer timeout', () => {
    const local = from({ 'oncely:sandbox': 'true' });
    expect(local.stage).toBe('local');
    expect(local.pipeline.consumerTimeout?.toSeconds()).toBe(2);
    expect(
      from({ 'oncely:sandbox': 'true', consumerTimeoutSeconds: '5' }).pipeline.consumerTimeout?.toSeconds(),
    ).toBe(5);
  });

  it('uses a placeholder notification URL until one is given', () => {
    expect(from({}).notificationUrl).toBe(PLACEHOLDER_NOTIFICATION_URL);
    expect(from({ notificationUrl: 'https://mail.example.com' }).notificationUrl).toBe(
      'https://mail.example.com',
    );
  });

  it('explains a bad value', () => {
    expect(() => from({ batchSize: 'ten' })).toThrow('Context value batchSize must be a number, got "ten".');
    expect(() => from({ notificationMode: 'exactly-once' })).toThrow(/at-most-once or at-least-once/);
    expect(() => from({ queueType: 'fair' })).toThrow(
      'Context value queueType must be fifo or standard, got "fair".',
    );
  });

  it('provisions a FIFO queue unless told standard', () => {
    expect(from({}).pipeline.queueType).toBe('fifo');
    expect(from({ queueType: 'standard' }).pipeline.queueType).toBe('standard');
  });

  it('keeps lease records in the table unless told valkey', () => {
    expect(from({}).leaseRecords).toBe('dynamodb');
    expect(from({ leaseRecords: 'valkey' }).leaseRecords).toBe('valkey');
    expect(() => from({ leaseRecords: 'redis' })).toThrow(
      'Context value leaseRecords must be dynamodb or valkey, got "redis".',
    );
  });
});

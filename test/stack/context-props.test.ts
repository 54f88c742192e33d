import { RemovalPolicy } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { PLACEHOLDER_NOTIFICATION_URL, pipelinePropsFromContext } from '../../examples/shop/lib/context-props.js';

const from = (context: Record<string, unknown>, stage = 'dev') =>
  pipelinePropsFromContext((k) => context[k], stage);

describe('pipeline props from CDK context', () => {
  it('reads numbers and durations given as strings on the command line', () => {
    const props = from({
      maxReceiveCount: '3',
      consumerTimeoutSeconds: '20',
      idempotencyTtlDays: '30',
      unresolvedCheckIntervalMinutes: '15',
    });
    expect(props.maxReceiveCount).toBe(3);
    expect(props.consumerTimeout?.toSeconds()).toBe(20);
    expect(props.idempotencyTtl?.toDays()).toBe(30);
    expect(props.unresolvedCheckInterval?.toMinutes()).toBe(15);
    expect(props.batchSize).toBeUndefined();
  });

  it('keeps prod data and protects it; tears other stages down', () => {
    expect(from({}, 'prod')).toMatchObject({ removalPolicy: RemovalPolicy.RETAIN, deletionProtection: true });
    expect(from({}, 'dev')).toMatchObject({
      removalPolicy: RemovalPolicy.DESTROY,
      deletionProtection: false,
    });
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
  });
});

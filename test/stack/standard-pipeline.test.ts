import { type CfnElement, Duration } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import { METRICS_SCOPE_ENVIRONMENT } from '../../lambdas/common/metrics-scope.js';
import { CONSUMER_ENVIRONMENT } from '../../lambdas/consumer/environment.js';
import { heldCopyReceives } from '../../lib/constructs/held-copy-receives.js';
import { buildStack } from './build-stack.js';

// OncelyPipeline with queueType 'standard' (DESIGN §5.1): what differs from FIFO
// (pipeline.test.ts covers what both share).
const { app, stack, template, pipeline } = buildStack({ queueType: 'standard' });

const ref = (element: { node: { defaultChild?: unknown } }) => ({
  Ref: stack.getLogicalId(element.node.defaultChild as CfnElement),
});

function queues(own = template) {
  const all = Object.values(own.findResources('AWS::SQS::Queue')).map((q) => q.Properties);
  return {
    queue: all.find((q) => q.RedrivePolicy),
    dlq: all.find((q) => !q.RedrivePolicy),
  };
}

describe('a standard pipeline', () => {
  it('is a standard queue redriving to a standard DLQ after maxAttempts + 15 receives (20)', () => {
    const { queue, dlq } = queues();
    for (const q of [queue, dlq]) {
      expect(q).toMatchObject({ SqsManagedSseEnabled: true });
      expect(q).not.toHaveProperty('FifoQueue');
      expect(q).not.toHaveProperty('DeduplicationScope');
      expect(q).not.toHaveProperty('FifoThroughputLimit');
      expect(q).not.toHaveProperty('ContentBasedDeduplication');
    }
    expect(queue).toMatchObject({ VisibilityTimeout: 180, RedrivePolicy: { maxReceiveCount: 20 } });
    expect(buildStack({ queueType: 'standard', maxAttempts: 8 }).pipeline.settings.maxReceiveCount).toBe(23);
    expect(pipeline.settings.queueType).toBe('standard');
  });

  it('feeds the consumer with partial batch responses, up to 10,000 records gathered over a batching window', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 10 },
      MaximumBatchingWindowInSeconds: Match.absent(),
    });
    const { template: big } = buildStack({
      queueType: 'standard',
      batchSize: 10_000,
      maxBatchingWindow: Duration.seconds(5),
      maxConcurrency: 4,
    });
    big.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 10_000,
      MaximumBatchingWindowInSeconds: 5,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 4 },
    });
  });

  it('gives the consumer the environment standardBatch reads: its records at once, not FIFO’s groups', () => {
    const consumer = Object.entries(template.findResources('AWS::Lambda::Function')).find(([id]) =>
      id.includes('Consumer'),
    )?.[1].Properties.Environment.Variables;
    expect(
      Object.keys(consumer)
        .filter((name) => !name.startsWith('POWERTOOLS_'))
        .sort(),
    ).toEqual(
      [...Object.values(CONSUMER_ENVIRONMENT), METRICS_SCOPE_ENVIRONMENT.pipeline]
        .filter((name) => name !== CONSUMER_ENVIRONMENT.maxConcurrentGroups)
        // The cache's, set only with leaseRecords: 'valkey' (valkey-lease-records.test.ts).
        .filter((name) => !name.startsWith('IDEMPOTENCY_VALKEY_'))
        .sort(),
    );
    expect(consumer).toMatchObject({
      [CONSUMER_ENVIRONMENT.queueUrl]: ref(pipeline.queue),
      [CONSUMER_ENVIRONMENT.dlqUrl]: ref(pipeline.deadLetterQueue),
      [CONSUMER_ENVIRONMENT.maxConcurrentRecords]: '100',
      [CONSUMER_ENVIRONMENT.maxAttempts]: '5',
    });
    const { template: own } = buildStack({ queueType: 'standard', maxConcurrentRecords: 25 });
    own.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [CONSUMER_ENVIRONMENT.maxConcurrentRecords]: '25' }) },
    });
  });

  it('lets the consumer set its failed records’ visibility on the queue it reads, and nowhere else', () => {
    const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
      (policy) => policy.Properties.PolicyDocument.Statement,
    );
    const changing = statements.filter((statement: { Action: string | string[] }) =>
      [statement.Action].flat().includes('sqs:ChangeMessageVisibility'),
    );
    expect(changing.map((statement: { Resource: unknown }) => statement.Resource)).toEqual([
      { 'Fn::GetAtt': [stack.getLogicalId(pipeline.queue.node.defaultChild as CfnElement), 'Arn'] },
    ]);
  });

  it('raises the same alarms as a FIFO pipeline', () => {
    const names = (own: typeof template) =>
      Object.keys(own.findResources('AWS::CloudWatch::Alarm'))
        .map((id) => id.replace(/[0-9A-F]{8}$/, ''))
        .sort();
    expect(names(template)).toEqual(names(buildStack().template));
    expect(names(template).length).toBeGreaterThanOrEqual(8);
  });

  it('finds nothing unacknowledged in cdk-nag’s AWS Solutions pack', () => {
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations).toEqual([]);
    expect(report.success).toBe(true);
  });
});

describe('its backstop: maxReceiveCount', () => {
  it('counts the deliveries of a copy whose key is held for the consumer’s timeout (and the lease’s 2 s margin)', () => {
    // The delays at their shortest: 1, 2, 4, 8, 16, 32 s … after the 1st, 2nd, … delivery.
    expect(heldCopyReceives(30)).toBe(6); // back at 1, 3, 7, 15, 31 s (≤ 32 s)
    expect(heldCopyReceives(28)).toBe(5); // 31 s is past 30 s
    expect(heldCopyReceives(15 * 60)).toBe(13); // Lambda's longest timeout: DESIGN §5.1's "about 13"
  });

  it('refuses fewer than maxAttempts + those deliveries, and its default is enough at any consumer timeout', () => {
    expect(() => buildStack({ queueType: 'standard', maxReceiveCount: 10 })).toThrow(
      /maxReceiveCount \(10\) must be at least maxAttempts \+ 6 \(11\): a copy whose key another invocation holds/,
    );
    expect(buildStack({ queueType: 'standard', maxReceiveCount: 11 }).pipeline.settings.maxReceiveCount).toBe(
      11,
    );
    const longest = buildStack({ queueType: 'standard', consumerTimeout: Duration.minutes(15) });
    expect(longest.pipeline.settings.maxReceiveCount).toBe(20);
  });
});

describe('synth-time checks of the queue type', () => {
  it.each([
    [
      { queueType: 'standard', maxConcurrentGroups: 4 },
      /maxConcurrentGroups applies only with queueType: 'fifo'/,
    ],
    [{ maxConcurrentRecords: 4 }, /maxConcurrentRecords applies only with queueType: 'standard'/],
    [{ maxBatchingWindow: Duration.seconds(1) }, /maxBatchingWindow applies only with queueType: 'standard'/],
    [
      { queueType: 'standard', batchSize: 10_001 },
      /batchSize \(10001\) must be a whole number from 1 to 10000/,
    ],
    [{ queueType: 'standard', batchSize: 100 }, /batchSize \(100\) over 10 needs a maxBatchingWindow/],
    [
      { queueType: 'standard', maxBatchingWindow: Duration.seconds(301) },
      /maxBatchingWindow \(5 minutes 1 second\) must be a whole number of seconds up to 5 minutes/,
    ],
    [
      { queueType: 'standard', maxBatchingWindow: Duration.millis(1500) },
      /maxBatchingWindow \(1 second 500 millis\) must be a whole number of seconds/,
    ],
    [{ queueType: 'standard', maxConcurrentRecords: 0 }, /maxConcurrentRecords \(0\) must be a whole number/],
    [{ queueType: 'sqs' }, /queueType \(sqs\) must be 'fifo' or 'standard'/],
  ] as const)('refuses %o with a clear message', (settings, message) => {
    // biome-ignore lint/suspicious/noExplicitAny: an invalid queueType is what a JavaScript caller can pass.
    const build = () => buildStack(settings as any);
    expect(build).toThrow(OncelyConfigurationError);
    expect(build).toThrow(message);
  });

  it('still refuses a FIFO batch over 10, with or without a window', () => {
    for (const settings of [{}, { maxBatchingWindow: Duration.seconds(1) }]) {
      expect(() => buildStack({ batchSize: 100, ...settings })).toThrow(
        /batchSize \(100\) must be a whole number from 1 to 10 for a FIFO queue/,
      );
    }
  });
});

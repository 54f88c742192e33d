import { App, type CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AttributeType, BillingMode, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import { METRICS_SCOPE_ENVIRONMENT } from '../../lambdas/common/metrics-scope.js';
import { OUTBOX_PENDING_INDEX } from '../../lambdas/outbox/layout.js';
import { OncelyOutbox } from '../../lib/constructs/oncely-outbox.js';
import { OncelyPipeline, type OncelyPipelineProps } from '../../lib/constructs/oncely-pipeline.js';
import { OUTBOX_LOG_GROUP_OUTPUTS } from '../../lib/constructs/outbox-outputs.js';
import { PIPELINE_LOG_GROUP_OUTPUTS } from '../../lib/constructs/pipeline-outputs.js';
import { buildOutboxStack, buildStack, FIXTURE_CONSUMER } from './build-stack.js';

/**
 * What AWS does with the constructs' templates that neither moto's CloudFormation nor cfn-lint nor
 * cdk-nag can show (issue 41): each test names the AWS behaviour it keeps to.
 */

const newStack = (id = 'Test') => new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), id);

const pipelineIn = (stack: Stack, id: string, props: Partial<OncelyPipelineProps> = {}) =>
  new OncelyPipeline(stack, id, { consumer: { entry: FIXTURE_CONSUMER }, ...props });

const queueNamed = (template: Template, dlq: boolean) =>
  Object.values(template.findResources('AWS::SQS::Queue')).find(
    (queue) => Boolean(queue.Properties.RedrivePolicy) !== dlq,
  )?.Properties;

const problemsOf = (build: () => unknown): string => {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(OncelyConfigurationError);
    return (error as Error).message;
  }
  throw new Error('the construct accepted the props');
};

const standard = { queueType: 'standard', batchSize: 100, maxBatchingWindow: Duration.minutes(5) } as const;
// Synthesised as the file loads: the first synth imports most of aws-cdk-lib, which is no test's work.
const { template } = buildStack(standard);

describe('the visibility timeout covers the batching window (Lambda holds a message for it before invoking)', () => {
  it('defaults to 6 × consumerTimeout + maxBatchingWindow', () => {
    expect(queueNamed(template, false)?.VisibilityTimeout).toBe(6 * 30 + 300);
  });

  it('refuses a shorter explicit one, naming the timeout, the window and the floor', () => {
    const message = problemsOf(() => buildStack({ ...standard, visibilityTimeout: Duration.seconds(180) }));
    expect(message).toContain('visibilityTimeout (180 seconds)');
    expect(message).toContain('consumerTimeout (30 seconds)');
    expect(message).toContain('maxBatchingWindow (5 minutes');
    expect(message).toContain('= 480 seconds');
  });

  it('counts the window for a consumer you built too', () => {
    const stack = newStack();
    const fn = new LambdaFunction(stack, 'Mine', {
      runtime: Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: Code.fromInline('exports.handler = async () => ({})'),
      timeout: Duration.seconds(30),
    });
    const message = problemsOf(() =>
      pipelineIn(stack, 'Pipeline', {
        ...standard,
        consumer: { function: fn },
        visibilityTimeout: Duration.seconds(300),
      }),
    );
    expect(message).toContain('at least 480 seconds');
  });
});

describe('a standard DLQ outlives the queue (SQS keeps the first enqueue time when it moves a message there)', () => {
  it('refuses dlqRetention no longer than queueRetention', () => {
    const message = problemsOf(() =>
      buildStack({
        queueType: 'standard',
        queueRetention: Duration.days(14),
        dlqRetention: Duration.days(14),
      }),
    );
    expect(message).toContain('dlqRetention (14 days) must be longer than queueRetention (14 days)');
  });

  it('accepts the defaults (4 days, 14 days) and, on FIFO, equal retentions (its DLQ restarts the clock)', () => {
    expect(() => buildStack({ queueType: 'standard' })).not.toThrow();
    expect(() =>
      buildStack({ queueRetention: Duration.days(14), dlqRetention: Duration.days(14) }),
    ).not.toThrow();
  });
});

describe("the outbox's pending index on a provisioned table", () => {
  const provisioned = (stack: Stack) =>
    new Table(stack, 'Orders', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
      billingMode: BillingMode.PROVISIONED,
      readCapacity: 40,
      writeCapacity: 300,
      stream: StreamViewType.NEW_IMAGE,
      timeToLiveAttribute: 'expiresAt',
    });

  it("gets the table's read and write capacity, not CloudFormation's 5 units", () => {
    const { template } = buildOutboxStack((stack) => ({ table: provisioned(stack) }));
    const [table] = Object.values(template.findResources('AWS::DynamoDB::Table')).filter(
      (t) => t.Properties.ProvisionedThroughput,
    );
    const index = table?.Properties.GlobalSecondaryIndexes.find(
      (gsi: { IndexName: string }) => gsi.IndexName === OUTBOX_PENDING_INDEX,
    );
    expect(index.ProvisionedThroughput).toEqual({ ReadCapacityUnits: 40, WriteCapacityUnits: 300 });
  });

  it("refuses a table whose writes auto scale while the index's do not, and accepts both scaled", () => {
    const build = (scaleIndex: boolean) =>
      buildOutboxStack(
        (stack) => {
          const table = provisioned(stack);
          table.autoScaleWriteCapacity({ minCapacity: 300, maxCapacity: 3000 }).scaleOnUtilization({
            targetUtilizationPercent: 70,
          });
          return { table };
        },
        {
          after: (outbox) => {
            if (!scaleIndex) return;
            outbox.table
              .autoScaleGlobalSecondaryIndexWriteCapacity(OUTBOX_PENDING_INDEX, {
                minCapacity: 300,
                maxCapacity: 3000,
              })
              .scaleOnUtilization({ targetUtilizationPercent: 70 });
          },
        },
      );
    expect(() => build(false)).toThrow(/auto scales its write capacity, but the outbox's pending index/);
    expect(() => build(true)).not.toThrow();
  });
});

describe('each pipeline and outbox alarms on its own metrics', () => {
  /** Two pipelines and two outboxes with the default serviceName in one stack, as the shop's stacks sit in one account. */
  function twoOfEach() {
    const stack = newStack('Shop');
    const pipelines = ['Fifo', 'Standard'].map((id) =>
      pipelineIn(stack, id, {
        outputPrefix: id,
        ...(id === 'Standard' ? { queueType: 'standard' as const } : {}),
      }),
    );
    pipelines.forEach((pipeline, i) => {
      new OncelyOutbox(stack, `Outbox${i}`, { pipeline, outputPrefix: `Outbox${i}` });
    });
    return { stack, template: Template.fromStack(stack) };
  }

  const customAlarms = (template: Template) =>
    Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((alarm) => alarm.Properties);

  type CfnMetric = { Namespace?: string; Dimensions?: { Name: string; Value: string }[] };
  type CfnAlarm = CfnMetric & { Metrics?: { MetricStat?: { Metric: CfnMetric } }[] };

  /** The dimensions of every metric an alarm watches in the custom namespace, directly or in its math. */
  const customDimensions = (alarm: CfnAlarm): Record<string, string>[] => {
    const metrics = alarm.Metrics
      ? alarm.Metrics.flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric] : []))
      : [alarm];
    return metrics
      .filter((metric) => metric.Namespace === 'oncely')
      .map((metric) => Object.fromEntries((metric.Dimensions ?? []).map((d) => [d.Name, d.Value])));
  };

  it('selects its own pipeline or outbox dimension, which its functions are told to publish', () => {
    const { template, stack } = twoOfEach();
    const scopes = customAlarms(template).flatMap(customDimensions);
    // RecordLivesNotExtended, InDoubtRecords, UnresolvedMonitorSilent, RetryPendingRecords and
    // PublisherErrors (its refusals) per pipeline; StuckMessages per outbox.
    expect(scopes).toHaveLength(2 * 5 + 2);
    for (const dimensions of scopes) {
      expect(Object.keys(dimensions).sort()).toEqual(
        dimensions.pipeline ? ['pipeline', 'service'] : ['outbox', 'service'],
      );
    }
    expect(new Set(scopes.map((d) => d.pipeline ?? d.outbox))).toEqual(
      new Set(['Shop/Fifo', 'Shop/Standard', 'Shop/Outbox0', 'Shop/Outbox1']),
    );
    const variables = Object.values(template.findResources('AWS::Lambda::Function')).map(
      (fn) => fn.Properties.Environment.Variables,
    );
    const told = (variable: string) => new Set(variables.map((v) => v[variable]).filter(Boolean));
    expect(told(METRICS_SCOPE_ENVIRONMENT.pipeline)).toEqual(new Set(['Shop/Fifo', 'Shop/Standard']));
    expect(told(METRICS_SCOPE_ENVIRONMENT.outbox)).toEqual(new Set(['Shop/Outbox0', 'Shop/Outbox1']));
    expect(stack.stackName).toBe('Shop');
  });
});

describe("the runbook's log groups exist: each function's is a stack output", () => {
  it("names the log group each of the pipeline's functions logs to", () => {
    const { template, stack, pipeline } = buildStack();
    const outputs = template.toJSON().Outputs;
    for (const [output, fn] of [
      [PIPELINE_LOG_GROUP_OUTPUTS.consumer, pipeline.consumer],
      [PIPELINE_LOG_GROUP_OUTPUTS.publisher, pipeline.publisher],
      [PIPELINE_LOG_GROUP_OUTPUTS.monitor, pipeline.unresolvedMonitor],
    ] as const) {
      const properties =
        template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnElement)].Properties;
      expect(outputs[output].Value).toEqual(properties.LoggingConfig.LogGroup);
    }
  });

  it("names the relay's and the sweeper's, after the outbox's prefix", () => {
    const { template, stack, outbox } = buildOutboxStack({ outputPrefix: 'Orders' });
    const outputs = template.toJSON().Outputs;
    for (const [output, fn] of [
      [OUTBOX_LOG_GROUP_OUTPUTS.relay, outbox.relay],
      [OUTBOX_LOG_GROUP_OUTPUTS.sweeper, outbox.sweeper],
    ] as const) {
      const properties =
        template.toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as CfnElement)].Properties;
      expect(outputs[`Orders${output}`].Value).toEqual(properties.LoggingConfig.LogGroup);
    }
  });
});

describe('outputPrefix is refused at synth when CloudFormation would refuse its logical ids', () => {
  it.each(['orders-', 'Orders_2', 'Ördrs'])('refuses %j on the pipeline and the outbox', (prefix) => {
    expect(problemsOf(() => buildStack({ outputPrefix: prefix }))).toContain(
      'may hold only letters and digits',
    );
    expect(problemsOf(() => buildOutboxStack({ outputPrefix: prefix }))).toContain(
      'may hold only letters and digits',
    );
  });

  it('takes letters and digits', () => {
    expect(() => buildStack({ outputPrefix: 'Orders2' })).not.toThrow();
  });
});

describe('reserved concurrency below maxConcurrency (throttled batches count receives toward the DLQ)', () => {
  it("refuses it on the consumer's entry, naming both values", () => {
    const message = problemsOf(() =>
      buildStack({
        maxConcurrency: 10,
        consumer: { entry: FIXTURE_CONSUMER, reservedConcurrentExecutions: 5 },
      }),
    );
    expect(message).toContain('reservedConcurrentExecutions (5) is below maxConcurrency (10)');
  });

  it('refuses it on a consumer you built, and takes reserved ≥ maxConcurrency', () => {
    const build = (reserved: number) => {
      const stack = newStack();
      const fn = new LambdaFunction(stack, 'Mine', {
        runtime: Runtime.NODEJS_24_X,
        handler: 'index.handler',
        code: Code.fromInline('exports.handler = async () => ({})'),
        timeout: Duration.seconds(30),
        reservedConcurrentExecutions: reserved,
        role: new Role(stack, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') }),
      });
      return pipelineIn(stack, 'Pipeline', { consumer: { function: fn }, maxConcurrency: 4 });
    };
    expect(problemsOf(() => build(3))).toContain(
      'reservedConcurrentExecutions (3) is below maxConcurrency (4)',
    );
    expect(() => build(4)).not.toThrow();
  });
});

describe('the FIFO DLQ', () => {
  it('is in high-throughput mode, as the queue is (a poison storm is not throttled at 300 sends a second)', () => {
    const { template } = buildStack();
    for (const queue of [queueNamed(template, true), queueNamed(template, false)]) {
      expect(queue).toMatchObject({
        DeduplicationScope: 'messageGroup',
        FifoThroughputLimit: 'perMessageGroupId',
      });
    }
  });
});

describe('the silence alarms', () => {
  it('UnresolvedMonitorSilent fills empty periods with 0 and ignores a metric never reported', () => {
    const { template } = buildStack();
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([Match.objectLike({ Expression: 'FILL(counts, 0)', ReturnData: true })]),
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      EvaluationPeriods: 3,
      TreatMissingData: 'ignore',
    });
  });

  it('StuckMessages counts a period without a sweep as stuck, and ignores a metric never reported', () => {
    const { template } = buildOutboxStack();
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([Match.objectLike({ Expression: 'FILL(stuck, 1)', ReturnData: true })]),
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Threshold: 1,
      EvaluationPeriods: 2,
      TreatMissingData: 'ignore',
    });
    expect(JSON.stringify(template.toJSON())).not.toContain('"breaching"');
  });
});

describe('a customer-managed KMS key', () => {
  /** A pipeline with its key, and another function of yours given the idempotency core. */
  function withKey() {
    const stack = newStack();
    const key = new Key(stack, 'Key', { enableKeyRotation: true });
    const pipeline = pipelineIn(stack, 'Pipeline', { encryptionKey: key });
    const other = new LambdaFunction(stack, 'Other', {
      runtime: Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: Code.fromInline('exports.handler = async () => ({})'),
    });
    pipeline.grantIdempotency(other);
    return { stack, key, pipeline, other, template: Template.fromStack(stack) };
  }

  it('encrypts both queues and the idempotency table', () => {
    const { template, stack, key } = withKey();
    const keyArn = { 'Fn::GetAtt': [stack.getLogicalId(key.node.defaultChild as CfnElement), 'Arn'] };
    for (const dlq of [true, false]) {
      expect(queueNamed(template, dlq)?.KmsMasterKeyId).toEqual(keyArn);
      expect(queueNamed(template, dlq)?.SqsManagedSseEnabled).toBeUndefined();
    }
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: keyArn },
    });
  });

  it("is granted to the publisher, the consumer and the monitor, and to grantIdempotency's function", () => {
    const { template, stack, key, pipeline, other } = withKey();
    const keyArn = { 'Fn::GetAtt': [stack.getLogicalId(key.node.defaultChild as CfnElement), 'Arn'] };
    const rolesWithKey = Object.values(template.findResources('AWS::IAM::Policy')).flatMap((policy) =>
      policy.Properties.PolicyDocument.Statement.some(
        (statement: { Resource: unknown; Action: string | string[] }) =>
          JSON.stringify(statement.Resource) === JSON.stringify(keyArn) &&
          [statement.Action].flat().includes('kms:GenerateDataKey*'),
      )
        ? policy.Properties.Roles.map((role: { Ref: string }) => role.Ref)
        : [],
    );
    const roleOf = (fn: { role?: { node: { defaultChild?: unknown } } }) =>
      stack.getLogicalId(fn.role?.node.defaultChild as CfnElement);
    expect(new Set(rolesWithKey)).toEqual(
      new Set(
        [pipeline.publisher, pipeline.consumer, pipeline.unresolvedMonitor, other].map((fn) =>
          roleOf(fn as never),
        ),
      ),
    );
  });
});

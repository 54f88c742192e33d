import { App, type CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Code, type IFunction, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import { OncelyOutbox } from '../../lib/constructs/oncely-outbox.js';
import { OncelyPipeline, type OncelyPipelineProps } from '../../lib/constructs/oncely-pipeline.js';
import { FIXTURE_CONSUMER } from './build-stack.js';

/** A pipeline in a stack of its own; `own` adds the user's resources first (a function to pass, say). */
function build(
  own: (stack: Stack) => Partial<OncelyPipelineProps> = () => ({}),
  after?: (pipeline: OncelyPipeline, stack: Stack) => void,
) {
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Own');
  const pipeline = new OncelyPipeline(stack, 'Pipeline', {
    consumer: { entry: FIXTURE_CONSUMER },
    ...own(stack),
  });
  after?.(pipeline, stack);
  return { stack, pipeline, template: Template.fromStack(stack) };
}

function userFunction(stack: Stack, id: string, timeout?: Duration): LambdaFunction {
  return new LambdaFunction(stack, id, {
    runtime: Runtime.NODEJS_24_X,
    handler: 'index.handler',
    code: Code.fromInline('export const handler = async () => ({ batchItemFailures: [] });'),
    timeout,
  });
}

interface Statement {
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

/** The statements of the policies attached to `role` that name the idempotency table (not its index). */
function tableStatements(
  template: Template,
  stack: Stack,
  pipeline: OncelyPipeline,
  role: IFunction['role'],
) {
  const roleRef = { Ref: stack.getLogicalId(role?.node.defaultChild as CfnElement) };
  const table = {
    'Fn::GetAtt': [stack.getLogicalId(pipeline.idempotencyTable.node.defaultChild as CfnElement), 'Arn'],
  };
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(JSON.stringify(roleRef)))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[])
    .filter((statement) => JSON.stringify(statement.Resource) === JSON.stringify(table));
}

describe('the idempotency table’s grants (DESIGN §3: record ids)', () => {
  const { stack, pipeline, template } = build();

  it('let the publisher put, update and delete its own request records (publish#…) and nothing else', () => {
    expect(tableStatements(template, stack, pipeline, pipeline.publisher.role)).toEqual([
      {
        Effect: 'Allow',
        Action: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
        Resource: expect.anything(),
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['publish#*'] } },
      },
    ]);
  });

  it('keep the consumer off the publisher’s request records', () => {
    expect(tableStatements(template, stack, pipeline, pipeline.consumer.role)).toEqual([
      {
        Effect: 'Allow',
        Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
        Resource: expect.anything(),
        Condition: { 'ForAllValues:StringNotLike': { 'dynamodb:LeadingKeys': ['publish#*'] } },
      },
    ]);
  });

  it('keep a function granted the core off the publisher’s records and the consumer’s DLQ marks', () => {
    let api: LambdaFunction | undefined;
    const built = build(
      () => ({}),
      (pipeline, own) => {
        api = userFunction(own, 'Api');
        pipeline.grantIdempotency(api);
      },
    );
    expect(tableStatements(built.template, built.stack, built.pipeline, api?.role)).toEqual([
      {
        Effect: 'Allow',
        Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
        Resource: expect.anything(),
        Condition: {
          'ForAllValues:StringNotLike': { 'dynamodb:LeadingKeys': ['publish#*', 'oncely/dead-lettered#*'] },
        },
      },
    ]);
  });
});

describe('a consumer you pass (issue 30, item 6)', () => {
  it('is refused without a role: nothing could be granted to it', () => {
    const error = catchError(() =>
      build((own) => ({
        consumer: {
          function: LambdaFunction.fromFunctionArn(
            own,
            'Imported',
            'arn:aws:lambda:us-east-1:123456789012:function:consumer',
          ),
        },
      })),
    );
    expect(error).toBeInstanceOf(OncelyConfigurationError);
    expect((error as Error).message).toMatch(
      /^Invalid OncelyPipeline Own\/Pipeline: [\s\S]*- the consumer Own\/Imported has no role[\s\S]*fromFunctionAttributes[\s\S]*role/,
    );
  });

  it('is accepted when imported with its role, which gets the grants', () => {
    let role: Role | undefined;
    const { stack, pipeline, template } = build((own) => {
      role = new Role(own, 'ConsumerRole', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
      return {
        consumer: {
          function: LambdaFunction.fromFunctionAttributes(own, 'Imported', {
            functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:consumer',
            role,
          }),
        },
      };
    });
    expect(tableStatements(template, stack, pipeline, role)).toHaveLength(1);
  });

  it.each([
    [
      Duration.seconds(31),
      {},
      /the consumer Own\/MyConsumer's timeout \(31 seconds\) needs a visibility timeout of at least 186 seconds/,
    ],
    [
      Duration.minutes(15),
      { consumerTimeout: Duration.minutes(2) },
      /timeout \(15 minutes\) needs a visibility timeout of at least 5400 seconds/,
    ],
  ])(
    'is refused when its timeout (%s) is too long for the queue’s visibility timeout',
    (timeout, settings, message) => {
      const error = catchError(() =>
        build((own) => ({ ...settings, consumer: { function: userFunction(own, 'MyConsumer', timeout) } })),
      );
      expect(error).toBeInstanceOf(OncelyConfigurationError);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).toMatch(/set consumerTimeout to its timeout/);
    },
  );

  it.each([
    ['30 seconds, the default consumerTimeout', Duration.seconds(30), {}],
    ['Lambda’s default, 3 seconds', undefined, {}],
    ['as long as consumerTimeout', Duration.minutes(5), { consumerTimeout: Duration.minutes(5) }],
  ])('is accepted with a timeout of %s', (_name, timeout, settings) => {
    const { template } = build((own) => ({
      ...settings,
      consumer: { function: userFunction(own, 'MyConsumer', timeout) },
    }));
    expect(Object.keys(template.findResources('AWS::Lambda::EventSourceMapping'))).toHaveLength(1);
  });

  it.each([
    ['grantIdempotency', (pipeline: OncelyPipeline, fn: IFunction) => pipeline.grantIdempotency(fn)],
    ['grantPublish', (pipeline: OncelyPipeline, fn: IFunction) => pipeline.grantPublish(fn)],
    [
      'grantWrite',
      (pipeline: OncelyPipeline, fn: IFunction) =>
        new OncelyOutbox(pipeline, 'Outbox', { pipeline }).grantWrite(fn),
    ],
  ])('nor can any function without a role be given %s', (name, grant) => {
    const error = catchError(() =>
      build(
        () => ({}),
        (pipeline, own) =>
          grant(
            pipeline,
            LambdaFunction.fromFunctionArn(
              own,
              'Other',
              'arn:aws:lambda:us-east-1:123456789012:function:other',
            ),
          ),
      ),
    );
    expect(error).toBeInstanceOf(OncelyConfigurationError);
    expect((error as Error).message).toMatch(new RegExp(`^${name}: the \\w+ Own/Other has no role`));
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

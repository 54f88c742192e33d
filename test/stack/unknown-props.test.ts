import { App, Duration, Stack } from 'aws-cdk-lib';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import { OncelyOutbox } from '../../lib/constructs/oncely-outbox.js';
import { OncelyPipeline } from '../../lib/constructs/oncely-pipeline.js';
import { FIXTURE_CONSUMER } from './build-stack.js';

// Issue 43, item 7: a construct refuses a misspelt prop at synth, as it refuses props that cannot
// work (invalid-props.ts): the construct by its path, each unknown prop and the nearest valid one.

/** A stack of its own that bundles nothing. */
function emptyStack(): Stack {
  return new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Test');
}

/** What `build` threw. */
function refusal(build: () => unknown): unknown {
  try {
    build();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
}

describe('a construct given an unknown prop (issue 43, item 7)', () => {
  it('OncelyPipeline names it and the nearest prop, with its path', () => {
    const stack = emptyStack();
    const error = refusal(
      () =>
        new OncelyPipeline(stack, 'Pipeline', {
          consumer: { entry: FIXTURE_CONSUMER },
          maxRecieveCount: 5,
          alarmTopc: undefined,
        } as never),
    );
    expect(error).toBeInstanceOf(OncelyConfigurationError);
    expect((error as OncelyConfigurationError).sources).toEqual(['Test/Pipeline']);
    expect((error as Error).message).toBe(
      'Invalid OncelyPipeline Test/Pipeline: change these props and synthesize again:\n' +
        '- unknown prop "maxRecieveCount": did you mean "maxReceiveCount"?\n' +
        '- unknown prop "alarmTopc": did you mean "alarmTopic"?',
    );
  });

  it('OncelyPipeline refuses a misspelt consumer before reading it', () => {
    const error = refusal(
      () => new OncelyPipeline(emptyStack(), 'Pipeline', { consumr: { entry: FIXTURE_CONSUMER } } as never),
    );
    expect((error as Error).message).toContain('- unknown prop "consumr": did you mean "consumer"?');
  });

  it('OncelyPipeline refuses an unknown key of a consumer you built, which takes only its function', () => {
    const stack = emptyStack();
    const fn = new LambdaFunction(stack, 'Consumer', {
      runtime: Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: Code.fromInline('export const handler = async () => ({ batchItemFailures: [] });'),
    });
    const error = refusal(
      () =>
        new OncelyPipeline(stack, 'Pipeline', {
          consumer: { function: fn, timeout: Duration.seconds(30) },
        } as never),
    );
    expect((error as Error).message).toContain(
      '- unknown consumer prop "timeout" (none is close; the consumer props are function)',
    );
  });

  it('OncelyOutbox names it and the nearest prop, with its path', () => {
    const stack = emptyStack();
    const pipeline = new OncelyPipeline(stack, 'Pipeline', { consumer: { entry: FIXTURE_CONSUMER } });
    const error = refusal(
      () => new OncelyOutbox(stack, 'Outbox', { pipeline, sweepIntervall: Duration.minutes(1) } as never),
    );
    expect(error).toBeInstanceOf(OncelyConfigurationError);
    expect((error as Error).message).toBe(
      'Invalid OncelyOutbox Test/Outbox: change these props and synthesize again:\n' +
        '- unknown prop "sweepIntervall": did you mean "sweepInterval"?',
    );
  });

  it('accepts a valid prop whose value is undefined', () => {
    const stack = emptyStack();
    const pipeline = new OncelyPipeline(stack, 'Pipeline', {
      consumer: { entry: FIXTURE_CONSUMER },
      alarmTopic: undefined,
      batchSize: undefined,
    });
    expect(
      () => new OncelyOutbox(stack, 'Outbox', { pipeline, table: undefined, sweepInterval: undefined }),
    ).not.toThrow();
  });
});

import { resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LocalFunctionRuntime, type LocalFunctionSpec } from '../../sandbox/function-runtime.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION, localAwsConfig } from '../../sandbox/local-aws-config.js';
import { provisionTemplate } from '../../sandbox/provision.js';
import { uniqueName } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// The sandbox's managed mode (DESIGN §8, Lambda Managed Instances): a function with
// `perExecutionEnvironmentMaxConcurrency` gets up to that many invocations at once in one container.

const FUNCTIONS = resolve('test/sandbox/fixtures/functions');

const runtimes: LocalFunctionRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.stop()));
});

function runtime(handler: string, overrides: Partial<LocalFunctionSpec> = {}) {
  const name = `fn-${handler.replaceAll(/[^\w]/g, '-')}`;
  const created = new LocalFunctionRuntime({
    name,
    arn: `arn:aws:lambda:us-east-1:123456789012:function:${name}`,
    codeDirectory: FUNCTIONS,
    handler,
    timeoutSeconds: 20,
    environment: {},
    perExecutionEnvironmentMaxConcurrency: 2,
    ...overrides,
  });
  runtimes.push(created);
  return created;
}

interface Rendezvous {
  pid: number;
  requestId: string;
  storeRequestId: string | undefined;
  maxConcurrency: string | undefined;
  initializationType: string | undefined;
}

async function resultOf(invocation: ReturnType<LocalFunctionRuntime['invoke']>): Promise<Rendezvous> {
  const answer = await invocation;
  if (!answer.ok) throw new Error(`${answer.error.errorType}: ${answer.error.errorMessage}`);
  return answer.result as Rendezvous;
}

describe('the sandbox’s managed mode (Lambda Managed Instances)', () => {
  it('runs up to the maximum of invocations at once in one container, each in its own invoke context', async () => {
    const fn = runtime('managed.rendezvous');
    // Each answers only once another waits beside it in its container: 2 + 2, in two containers.
    const ids = ['a', 'b', 'c', 'd'].map((letter) => `request-${letter}`);
    const answers = await Promise.all(ids.map((id) => resultOf(fn.invoke({ together: 2 }, id))));
    expect(answers.map((answer) => answer.requestId)).toEqual(ids);
    // The runtime's InvokeStore gives each its own request id, though they share the module.
    expect(answers.map((answer) => answer.storeRequestId)).toEqual(ids);
    expect(answers[0]?.pid).toBe(answers[1]?.pid);
    expect(answers[2]?.pid).toBe(answers[3]?.pid);
    expect(answers[0]?.pid).not.toBe(answers[2]?.pid);
    expect(fn.usage().heapUsedBytes).toHaveLength(2);
    expect(answers[0]).toMatchObject({ maxConcurrency: '2', initializationType: 'lambda-managed-instances' });
  });

  it('reuses a container with room before starting another', async () => {
    const fn = runtime('managed.rendezvous', { perExecutionEnvironmentMaxConcurrency: 3 });
    const first = await resultOf(fn.invoke({ together: 1 }));
    const [second, third] = await Promise.all([
      resultOf(fn.invoke({ together: 2 })),
      resultOf(fn.invoke({ together: 2 })),
    ]);
    expect([second.pid, third.pid]).toEqual([first.pid, first.pid]);
    expect(fn.usage().heapUsedBytes).toHaveLength(1);
  });

  it('answers an invocation past its timeout as timed out, and neither stops it nor kills its container', async () => {
    const hang = runtime('managed.hang', { timeoutSeconds: 1, perExecutionEnvironmentMaxConcurrency: 1 });
    const answer = await hang.invoke({}, 'hung');
    expect(answer).toMatchObject({ ok: false, error: { errorType: 'Sandbox.Timedout' } });
    expect(hang.usage().heapUsedBytes).toHaveLength(1);
    // Its slot stays taken while it runs on: the next invocation gets a second container.
    const next = await hang.invoke({});
    expect(next).toMatchObject({ ok: false, error: { errorType: 'Sandbox.Timedout' } });
    expect(hang.usage().heapUsedBytes).toHaveLength(2);
  });

  it('fails every invocation a container runs when it crashes, and starts a fresh one for the next', async () => {
    const fn = runtime('managed.crashTogether');
    const [crashing, beside] = await Promise.all([
      fn.invoke({ together: 2, crash: true }),
      fn.invoke({ together: 2, hang: true }),
    ]);
    expect(crashing).toMatchObject({ ok: false, error: { errorType: 'Error', errorMessage: 'stray timer' } });
    expect(beside).toMatchObject({ ok: false, error: { errorType: 'Error', errorMessage: 'stray timer' } });
    expect(fn.usage().heapUsedBytes).toHaveLength(0);
    const next = await fn.invoke({ together: 1 });
    expect(next).toMatchObject({ ok: true, result: { pid: expect.any(Number) } });
    expect(fn.usage().heapUsedBytes).toHaveLength(1);
  });

  it('runs invocations at once in one container on nodejs22.x too', async () => {
    const fn = runtime('managed.rendezvous', { runtime: 'nodejs22.x' });
    const answers = await Promise.all([1, 2].map(() => resultOf(fn.invoke({ together: 2 }))));
    expect(answers[0]?.pid).toBe(answers[1]?.pid);
  });

  it('keeps one invocation at a time per container without the setting', async () => {
    const fn = runtime('managed.pid', { perExecutionEnvironmentMaxConcurrency: undefined });
    const pids = await Promise.all([fn.invoke({}), fn.invoke({})]);
    const [a, b] = pids.map((answer) => (answer.ok ? (answer.result as { pid: number }).pid : undefined));
    expect(a).toBeDefined();
    expect(a).not.toBe(b);
  });

  it('refuses a maximum that is not a positive integer', () => {
    expect(() => runtime('managed.pid', { perExecutionEnvironmentMaxConcurrency: 0 })).toThrow(
      /perExecutionEnvironmentMaxConcurrency must be a positive integer, not 0/,
    );
  });
});

describe('a function on a capacity provider, in a template the sandbox provisions', () => {
  const sqs = new SQSClient(localAwsConfig(emulatorEndpoint('sqsEndpoint')));
  const dynamodb = new DynamoDBClient(localAwsConfig(emulatorEndpoint('dynamodbEndpoint')));
  afterAll(() => {
    sqs.destroy();
    dynamodb.destroy();
  });

  /** A Node.js function of the fixtures' handlers, as `cdk synth` describes one, with `properties`. */
  const provisioned = async (properties: Record<string, unknown>) => {
    const { functions } = await provisionTemplate(
      {
        Resources: {
          Fn: {
            Type: 'AWS::Lambda::Function',
            Properties: { Handler: 'managed.rendezvous', Runtime: 'nodejs24.x', ...properties },
            Metadata: { 'aws:asset:path': 'functions', 'aws:asset:property': 'Code' },
          },
        },
      },
      {
        sqs,
        dynamodb,
        stackName: uniqueName('Managed'),
        region: LOCAL_REGION,
        accountId: LOCAL_ACCOUNT_ID,
        assemblyDirectory: resolve('test/sandbox/fixtures'),
      },
    );
    return functions[0];
  };
  const onProvider = (config: Record<string, unknown>) => ({
    CapacityProviderConfig: {
      LambdaManagedInstancesCapacityProviderConfig: {
        CapacityProviderArn: 'arn:aws:lambda:us-east-1:123456789012:capacity-provider:cp',
        ...config,
      },
    },
  });

  it('runs it with its PerExecutionEnvironmentMaxConcurrency, else Node.js’s 64, else one at a time', async () => {
    const set = await provisioned(onProvider({ PerExecutionEnvironmentMaxConcurrency: 3 }));
    expect(set?.perExecutionEnvironmentMaxConcurrency).toBe(3);
    expect((await provisioned(onProvider({})))?.perExecutionEnvironmentMaxConcurrency).toBe(64);
    expect((await provisioned({}))?.perExecutionEnvironmentMaxConcurrency).toBeUndefined();
    if (!set) throw new Error('no function provisioned');
    // As startSandbox runs it: three at once in one container.
    const fn = new LocalFunctionRuntime({ ...set, environment: {} });
    runtimes.push(fn);
    const answers = await Promise.all([1, 2, 3].map(() => resultOf(fn.invoke({ together: 3 }))));
    expect(new Set(answers.map((answer) => answer.pid)).size).toBe(1);
  });
});

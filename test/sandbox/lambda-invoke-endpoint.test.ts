import { resolve } from 'node:path';
import {
  InvalidRequestContentException,
  InvokeCommand,
  type InvokeCommandInput,
  LambdaClient,
  RequestTooLargeException,
  ResourceNotFoundException,
} from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LocalFunctionRuntime } from '../../sandbox/function-runtime.js';
import { inProcessFunction } from '../../sandbox/in-process-function.js';
import {
  type LambdaInvokeEndpoint,
  startLambdaInvokeEndpoint,
} from '../../sandbox/lambda-invoke-endpoint.js';
import { localAwsConfig, localFunctionArn } from '../../sandbox/local-aws-config.js';

/** A function run in this process, as the endpoint serves it. */
const local = (name: string, timeoutMs: number, handler: (event: unknown, context: Context) => unknown) =>
  inProcessFunction({ name, arn: localFunctionArn(name), timeoutMs, handler });

let endpoint: LambdaInvokeEndpoint;
let lambda: LambdaClient;
const backgroundEvents: unknown[] = [];
let releaseSlowHandler: () => void = () => undefined;

beforeAll(async () => {
  endpoint = await startLambdaInvokeEndpoint({
    functions: {
      echo: local('echo', 3_000, async (event, context) => ({
        event,
        functionName: context.functionName,
        invokedFunctionArn: context.invokedFunctionArn,
        awsRequestId: context.awsRequestId,
        remainingMs: context.getRemainingTimeInMillis(),
      })),
      nothing: local('nothing', 1_000, async () => undefined),
      fails: local('fails', 1_000, async () => {
        throw new RangeError('out of stock');
      }),
      throwsString: local('throwsString', 1_000, () => {
        throw 'boom';
      }),
      slow: local('slow', 100, () => new Promise<void>((resolve) => (releaseSlowHandler = resolve))),
      background: local('background', 1_000, async (event) => {
        backgroundEvents.push(event);
      }),
    },
  });
  lambda = new LambdaClient({ ...localAwsConfig(endpoint.endpoint), maxAttempts: 1 });
});

afterAll(async () => {
  releaseSlowHandler();
  lambda.destroy();
  await endpoint.stop();
});

async function invoke(input: Omit<InvokeCommandInput, 'Payload'> & { event?: unknown; body?: string }) {
  const { event, body, ...rest } = input;
  const text = body ?? (event === undefined ? undefined : JSON.stringify(event));
  const output = await lambda.send(
    new InvokeCommand({
      ...rest,
      ...(text === undefined ? {} : { Payload: new TextEncoder().encode(text) }),
    }),
  );
  const payload = output.Payload ? new TextDecoder().decode(output.Payload) : '';
  return { ...output, payload: payload ? JSON.parse(payload) : undefined };
}

describe('Lambda Invoke endpoint', () => {
  it('runs the handler with a Lambda-like context and answers its result', async () => {
    const { StatusCode, FunctionError, ExecutedVersion, payload } = await invoke({
      FunctionName: 'echo',
      event: { orderId: 'o-1' },
    });
    expect({ StatusCode, FunctionError, ExecutedVersion }).toEqual({
      StatusCode: 200,
      FunctionError: undefined,
      ExecutedVersion: '$LATEST',
    });
    expect(payload).toEqual({
      event: { orderId: 'o-1' },
      functionName: 'echo',
      invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:echo',
      awsRequestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      remainingMs: expect.any(Number),
    });
    expect(payload.remainingMs).toBeGreaterThan(2_000);
    expect(payload.remainingMs).toBeLessThanOrEqual(3_000);
  });

  it('answers null for a handler that returns nothing, and gives it {} for an empty payload', async () => {
    expect((await invoke({ FunctionName: 'nothing' })).payload).toBeNull();
    expect((await invoke({ FunctionName: 'echo' })).payload.event).toEqual({});
  });

  it('finds a function by name, partial ARN or ARN, with or without $LATEST', async () => {
    for (const FunctionName of [
      endpoint.functionArn('echo'),
      `${endpoint.functionArn('echo')}:$LATEST`,
      '123456789012:function:echo',
      'echo:$LATEST',
    ]) {
      expect((await invoke({ FunctionName })).payload.functionName).toBe('echo');
    }
    expect((await invoke({ FunctionName: 'echo', Qualifier: '$LATEST' })).StatusCode).toBe(200);
  });

  it('reports a thrown error as Lambda does: Unhandled, with errorType, errorMessage and trace', async () => {
    const { StatusCode, FunctionError, payload } = await invoke({ FunctionName: 'fails', event: {} });
    expect({ StatusCode, FunctionError }).toEqual({ StatusCode: 200, FunctionError: 'Unhandled' });
    expect(payload).toEqual({
      errorType: 'RangeError',
      errorMessage: 'out of stock',
      trace: expect.any(Array),
    });
    expect(payload.trace[0]).toBe('RangeError: out of stock');

    const thrownString = await invoke({ FunctionName: 'throwsString', event: {} });
    expect(thrownString.payload).toEqual({ errorType: 'string', errorMessage: 'boom', trace: [] });
  });

  it('reports a handler that outlives its timeout as Lambda reports a timeout', async () => {
    const { FunctionError, payload } = await invoke({ FunctionName: 'slow', event: {} });
    expect(FunctionError).toBe('Unhandled');
    expect(payload).toEqual({
      errorType: 'Sandbox.Timedout',
      errorMessage: expect.stringMatching(
        /^RequestId: [0-9a-f-]{36} Error: Task timed out after 0\.10 seconds$/,
      ),
    });
  });

  it('answers an Event invocation with 202 at once and runs the handler in the background', async () => {
    const { StatusCode, payload } = await invoke({
      FunctionName: 'background',
      InvocationType: 'Event',
      event: { n: 1 },
    });
    expect(StatusCode).toBe(202);
    expect(payload).toBeUndefined();
    await expect.poll(() => backgroundEvents, { timeout: 60_000 }).toEqual([{ n: 1 }]);
  });

  it('raises the SDK typed error for an unknown function, version or alias', async () => {
    for (const FunctionName of ['missing', 'echo:live', endpoint.functionArn('missing')]) {
      const error = await invoke({ FunctionName }).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(ResourceNotFoundException);
      expect(error).toMatchObject({ $metadata: { httpStatusCode: 404 } });
    }
    await expect(invoke({ FunctionName: 'missing' })).rejects.toThrow(
      'Function not found: arn:aws:lambda:us-east-1:123456789012:function:missing',
    );
  });

  it('refuses a payload that is not JSON, or too large, as Lambda does', async () => {
    await expect(invoke({ FunctionName: 'echo', body: '{not json' })).rejects.toBeInstanceOf(
      InvalidRequestContentException,
    );
    const tooLarge = JSON.stringify('x'.repeat(6_291_456));
    await expect(invoke({ FunctionName: 'echo', body: tooLarge })).rejects.toBeInstanceOf(
      RequestTooLargeException,
    );
    // An asynchronous invocation's limit is 1 MB (AWS raised it from 256 KB in 2025).
    const overAsyncLimit = JSON.stringify('x'.repeat(1_048_576));
    await expect(
      lambda.send(
        new InvokeCommand({
          FunctionName: 'background',
          InvocationType: 'Event',
          Payload: new TextEncoder().encode(overAsyncLimit),
        }),
      ),
    ).rejects.toBeInstanceOf(RequestTooLargeException);
  });
});

describe('Lambda Invoke endpoint: a crashing function', () => {
  let crashing: LambdaInvokeEndpoint;
  let client: LambdaClient;
  /** Runs in the sandbox's containers (child processes), where a function can really crash. */
  const worker = (name: string, handler: string) =>
    new LocalFunctionRuntime({
      name,
      arn: localFunctionArn(name),
      codeDirectory: resolve('test/sandbox/fixtures/functions'),
      handler,
      timeoutSeconds: 5,
      environment: {},
    });
  const runtimes: LocalFunctionRuntime[] = [];

  beforeAll(async () => {
    runtimes.push(
      worker('crashes', 'crashing.crashes'),
      worker('broken', 'broken.handler'),
      worker('large', 'container.large'),
    );
    crashing = await startLambdaInvokeEndpoint({
      functions: {
        crashes: runtimes[0] as LocalFunctionRuntime,
        broken: runtimes[1] as LocalFunctionRuntime,
        large: runtimes[2] as LocalFunctionRuntime,
        bigint: local('bigint', 1_000, async () => ({ total: 10n })),
      },
    });
    client = new LambdaClient({ ...localAwsConfig(crashing.endpoint), maxAttempts: 1 });
  });

  afterAll(async () => {
    client.destroy();
    await crashing.stop();
    await Promise.all(runtimes.map((runtime) => runtime.stop()));
  });

  async function invokeCrashing(FunctionName: string, event: unknown = {}) {
    const output = await client.send(
      new InvokeCommand({ FunctionName, Payload: new TextEncoder().encode(JSON.stringify(event)) }),
    );
    return {
      StatusCode: output.StatusCode,
      FunctionError: output.FunctionError,
      payload: JSON.parse(new TextDecoder().decode(output.Payload)),
    };
  }

  it.each([
    ['overflows the stack', 'crashes', { how: 'overflow' }, 'RangeError', 'Maximum call stack size exceeded'],
    ['exits', 'crashes', { how: 'exit' }, 'Runtime.ExitError', expect.stringMatching(/exit status 3$/)],
    ['throws from a timer', 'crashes', { how: 'timer' }, 'TypeError', 'thrown from a timer'],
    ['fails to load', 'broken', {}, 'Error', 'the configuration is missing'],
    [
      'answers more than 6 MB',
      'large',
      { bytes: 7_000_000 },
      'Function.ResponseSizeTooLarge',
      'Response payload size exceeded maximum allowed payload size (6291556 bytes).',
    ],
    [
      'returns what JSON cannot hold',
      'bigint',
      {},
      'Error',
      'Unable to stringify response body: Do not know how to serialize a BigInt',
    ],
  ])(
    'answers a function that %s with a function error, not a service error',
    async (_, name, event, type, message) => {
      expect(await invokeCrashing(name, event)).toEqual({
        StatusCode: 200,
        FunctionError: 'Unhandled',
        payload: expect.objectContaining({ errorType: type, errorMessage: message }),
      });
    },
  );
});

describe('Lambda Invoke endpoint lifecycle', () => {
  it('stops answering once stopped', async () => {
    const own = await startLambdaInvokeEndpoint({ functions: { f: local('f', 1_000, () => 'ok') } });
    const client = new LambdaClient({ ...localAwsConfig(own.endpoint), maxAttempts: 1 });
    expect(own.port).toBeGreaterThan(0);
    expect((await client.send(new InvokeCommand({ FunctionName: 'f' }))).StatusCode).toBe(200);

    await own.stop();
    client.destroy();
    const afterStop = new LambdaClient({ ...localAwsConfig(own.endpoint), maxAttempts: 1 });
    await expect(afterStop.send(new InvokeCommand({ FunctionName: 'f' }))).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    afterStop.destroy();
  });
});

describe('Lambda Invoke endpoint: retries of a failed Event invocation', () => {
  /** Each attempt's request id, by function; and what the endpoint says of each failed attempt. */
  const attempts: Record<string, string[]> = { failing: [], failingOnce: [] };
  const logged: string[] = [];
  let own: LambdaInvokeEndpoint;
  let client: LambdaClient;

  beforeAll(async () => {
    const failing = (name: string) =>
      local(name, 1_000, (_event, context) => {
        attempts[name].push(context.awsRequestId);
        throw new Error('the job failed');
      });
    own = await startLambdaInvokeEndpoint({
      functions: { failing: failing('failing'), failingOnce: failing('failingOnce') },
      asyncInvocation: {
        configOf: (name) =>
          name === 'failingOnce' ? { maximumRetryAttempts: 0, maximumEventAgeSeconds: 60 } : undefined,
        retryDelaysMs: [20, 20],
      },
    });
    client = new LambdaClient({ ...localAwsConfig(own.endpoint), maxAttempts: 1 });
    vi.spyOn(console, 'error').mockImplementation((line: unknown) => logged.push(String(line)));
  });

  afterAll(async () => {
    vi.restoreAllMocks();
    client.destroy();
    await own.stop();
  });

  /** Invokes `name` with `Event` and waits until the endpoint gives the event up; its request id. */
  async function invokeUntilGivenUp(name: string): Promise<string> {
    const output = await client.send(new InvokeCommand({ FunctionName: name, InvocationType: 'Event' }));
    expect(output.StatusCode).toBe(202);
    const requestId = String(output.$metadata.requestId);
    await expect
      .poll(() => logged.some((line) => line.includes(requestId) && line.includes('given up')), {
        timeout: 30_000,
      })
      .toBe(true);
    return requestId;
  }

  it('retries it twice with the same request id, as Lambda does, then gives it up', async () => {
    const requestId = await invokeUntilGivenUp('failing');
    expect(attempts.failing).toEqual([requestId, requestId, requestId]);
  });

  it('does not retry it when the function’s MaximumRetryAttempts is 0', async () => {
    const requestId = await invokeUntilGivenUp('failingOnce');
    expect(attempts.failingOnce).toEqual([requestId]);
  });
});

import {
  InvalidRequestContentException,
  InvokeCommand,
  type InvokeCommandInput,
  LambdaClient,
  RequestTooLargeException,
  ResourceNotFoundException,
} from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type LambdaInvokeEndpoint,
  LambdaInvokeEndpointError,
  startLambdaInvokeEndpoint,
} from '../../sandbox/lambda-invoke-endpoint';
import { localAwsConfig } from '../../sandbox/local-aws-config';

let endpoint: LambdaInvokeEndpoint;
let lambda: LambdaClient;
const backgroundEvents: unknown[] = [];
let releaseSlowHandler: () => void = () => undefined;

beforeAll(async () => {
  endpoint = await startLambdaInvokeEndpoint({
    functions: {
      echo: {
        timeoutMs: 3_000,
        handler: async (event, context: Context) => ({
          event,
          functionName: context.functionName,
          invokedFunctionArn: context.invokedFunctionArn,
          awsRequestId: context.awsRequestId,
          remainingMs: context.getRemainingTimeInMillis(),
        }),
      },
      nothing: { timeoutMs: 1_000, handler: async () => undefined },
      fails: {
        timeoutMs: 1_000,
        handler: async () => {
          throw new RangeError('out of stock');
        },
      },
      throwsString: {
        timeoutMs: 1_000,
        handler: () => {
          throw 'boom';
        },
      },
      slow: {
        timeoutMs: 100,
        handler: () => new Promise<void>((resolve) => (releaseSlowHandler = resolve)),
      },
      background: {
        timeoutMs: 1_000,
        handler: async (event) => {
          backgroundEvents.push(event);
        },
      },
      readsEnvironment: {
        timeoutMs: 1_000,
        environment: { ONCELY_ENDPOINT_TEST: 'from the function' },
        handler: async () => process.env.ONCELY_ENDPOINT_TEST,
      },
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
    await expect.poll(() => backgroundEvents, { timeout: 5_000 }).toEqual([{ n: 1 }]);
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
  });

  it("sets the functions' environment while it runs", async () => {
    expect((await invoke({ FunctionName: 'readsEnvironment' })).payload).toBe('from the function');
  });
});

describe('Lambda Invoke endpoint lifecycle', () => {
  it('restores process.env and stops answering once stopped', async () => {
    const own = await startLambdaInvokeEndpoint({
      functions: {
        f: { timeoutMs: 1_000, environment: { ONCELY_LIFECYCLE_TEST: 'set' }, handler: () => 'ok' },
      },
    });
    const client = new LambdaClient({ ...localAwsConfig(own.endpoint), maxAttempts: 1 });
    expect(own.port).toBeGreaterThan(0);
    expect(process.env.ONCELY_LIFECYCLE_TEST).toBe('set');
    expect((await client.send(new InvokeCommand({ FunctionName: 'f' }))).StatusCode).toBe(200);

    await own.stop();
    client.destroy();
    expect(process.env.ONCELY_LIFECYCLE_TEST).toBeUndefined();
    const afterStop = new LambdaClient({ ...localAwsConfig(own.endpoint), maxAttempts: 1 });
    await expect(afterStop.send(new InvokeCommand({ FunctionName: 'f' }))).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    afterStop.destroy();
  });

  it('refuses two functions that need one variable to hold different values', async () => {
    const start = startLambdaInvokeEndpoint({
      functions: {
        publisher: { timeoutMs: 1_000, environment: { QUEUE_URL: 'a' }, handler: () => 'ok' },
        consumer: { timeoutMs: 1_000, environment: { QUEUE_URL: 'b' }, handler: () => 'ok' },
      },
    });
    await expect(start).rejects.toThrow(LambdaInvokeEndpointError);
    await expect(start).rejects.toThrow('Functions publisher and consumer set QUEUE_URL to different values');
  });
});

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import { type AsyncInvokeConfig, invokeAsynchronously } from './async-invocation.js';
import { FunctionThrottledError } from './function-concurrency.js';
import type { FunctionError, InvocationResult, LocalInvoker } from './lambda-context.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from './local-aws-config.js';

export interface LambdaInvokeEndpointOptions {
  /** The functions it serves, by name: child-process runtimes in the sandbox, in-process ones in tests. */
  functions: Record<string, LocalInvoker>;
  /** Port to listen on (loopback only); 0, the default, takes a free one. */
  port?: number;
  region?: string;
  /** The account local ARNs name; the emulators' account unless given. */
  accountId?: string;
  /** How `Event` invocations are retried; by default with Lambda's defaults and waits. */
  asyncInvocation?: {
    /** A function's `AWS::Lambda::EventInvokeConfig`, by function name. */
    configOf?: (functionName: string) => AsyncInvokeConfig | undefined;
    /** The waits before the retries (the sandbox's `asyncRetryDelaysMs`). */
    retryDelaysMs?: readonly number[];
  };
}

export interface LambdaInvokeEndpoint {
  /** Point the AWS SDK here, e.g. with `AWS_ENDPOINT_URL_LAMBDA`. */
  readonly endpoint: string;
  readonly port: number;
  functionArn(name: string): string;
  /** Stops listening, cancels the `Event` invocations' retries not yet started, and waits for those running. */
  stop(): Promise<void>;
}

/** The endpoint cannot listen. */
export class LambdaInvokeEndpointError extends OncelyError {
  static override readonly errorName: string = 'LambdaInvokeEndpointError';
  readonly retryable = false;
}

const HOST = '127.0.0.1';
const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;
/** A name, `123456789012:function:name` or a full ARN, each with an optional `:qualifier`. */
const FUNCTION_REFERENCE =
  /^(?:arn:aws[\w-]*:lambda:[\w-]+:\d{12}:function:|\d{12}:function:)?([\w-]{1,64})(?::([\w$-]+))?$/;
/** Lambda's payload limits: 6 MB for a synchronous invocation, 1 MB for an asynchronous one. */
const MAX_PAYLOAD_BYTES = { RequestResponse: 6_291_456, Event: 1_048_576, DryRun: 6_291_456 } as const;

type InvocationType = keyof typeof MAX_PAYLOAD_BYTES;

/**
 * A Lambda `Invoke`-compatible HTTP endpoint on loopback that runs local functions and answers as
 * Lambda does — so the AWS SDK, and the clients built on it,
 * behave as against AWS: results and function errors (`X-Amz-Function-Error: Unhandled` with
 * `{ errorType, errorMessage, trace }`), `Event` invocations (202, run in the background) and
 * service errors in the AWS JSON shape (an unknown function is a `ResourceNotFoundException`).
 *
 * A function's reserved concurrency, when its invoker enforces it, throttles with a 429
 * `TooManyRequestsException`. `Event` invocations are retried as Lambda retries them
 * ({@link invokeAsynchronously}).
 *
 * Not emulated: versions and aliases (only `$LATEST`), log tails and destinations.
 */
export async function startLambdaInvokeEndpoint(
  options: LambdaInvokeEndpointOptions,
): Promise<LambdaInvokeEndpoint> {
  const region = options.region ?? LOCAL_REGION;
  const accountId = options.accountId ?? LOCAL_ACCOUNT_ID;
  const functionArn = (name: string) => `arn:aws:lambda:${region}:${accountId}:function:${name}`;
  const events = new EventInvocations(options.asyncInvocation);
  const server = createServer((request, response) => {
    serveInvoke(request, response, { functions: options.functions, functionArn, events }).catch(
      (error: unknown) => sendServiceError(response, failureAnswer(error)),
    );
  });
  const port = await listen(server, options.port ?? 0);

  return {
    endpoint: `http://${HOST}:${port}`,
    port,
    functionArn,
    async stop() {
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      await events.stop();
    },
  };
}

/** What an invocation needs of the endpoint. */
interface InvokeContext {
  functions: Record<string, LocalInvoker>;
  functionArn(name: string): string;
  events: EventInvocations;
}

/** An `Invoke` request the endpoint accepted: the function, how to invoke it, and its event. */
interface InvokeCall {
  name: string;
  target: LocalInvoker;
  type: InvocationType;
  event: unknown;
  /** The event as the JSON text the request sent (`{}` for an empty body): it may nest too deep to re-serialise. */
  payload: string;
}

/** An error answer of Lambda's API: the SDK raises the exception `type` names. */
interface ServiceErrorAnswer {
  status: number;
  type: string;
  message: string;
  /** More fields of the error's body, e.g. a throttle's `Reason`. */
  fields?: Record<string, string>;
}

type Refused = { refused: ServiceErrorAnswer };

/** Answers one request: the invocation's result, 202 for an `Event`, 204 for a `DryRun`, or why not. */
async function serveInvoke(
  request: IncomingMessage,
  response: ServerResponse,
  context: InvokeContext,
): Promise<void> {
  const call = await readInvokeCall(request, context);
  if ('refused' in call) return sendServiceError(response, call.refused);
  const awsRequestId = randomUUID();
  const headers = { 'x-amzn-RequestId': awsRequestId, 'X-Amz-Executed-Version': '$LATEST' };
  if (call.type === 'DryRun') {
    response.writeHead(204, headers).end();
    return;
  }
  if (call.type === 'Event') {
    context.events.start(call, awsRequestId);
    response.writeHead(202, headers).end();
    return;
  }
  const run = call.target.invoke(call.event, awsRequestId, call.payload).then(handlerOutcome);
  const { payload, functionError } = await run;
  response
    .writeHead(200, {
      ...headers,
      'Content-Type': 'application/json',
      ...(functionError ? { 'X-Amz-Function-Error': functionError } : {}),
    })
    .end(payload);
}

/** The request's function, invocation type and event, or the error Lambda answers a bad one with. */
async function readInvokeCall(
  request: IncomingMessage,
  context: InvokeContext,
): Promise<InvokeCall | Refused> {
  const target = invokedFunction(request, context);
  if ('refused' in target) return target;
  const invocationType = request.headers['x-amz-invocation-type'] ?? 'RequestResponse';
  if (!Object.hasOwn(MAX_PAYLOAD_BYTES, String(invocationType))) {
    const message = `1 validation error detected: Value '${invocationType}' at 'invocationType' failed to satisfy constraint: Member must satisfy enum value set: [Event, RequestResponse, DryRun]`;
    return { refused: { status: 400, type: 'ValidationException', message } };
  }
  const type = invocationType as InvocationType;
  const body = await readBody(request, MAX_PAYLOAD_BYTES[type]);
  if (body === undefined) {
    const message = `Request must be smaller than ${MAX_PAYLOAD_BYTES[type]} bytes for the InvokeFunction operation`;
    return { refused: { status: 413, type: 'RequestTooLargeException', message } };
  }
  let event: unknown;
  try {
    event = body.length === 0 ? {} : JSON.parse(body);
  } catch (error) {
    const message = `Could not parse request body into json: ${(error as Error).message}`;
    return { refused: { status: 400, type: 'InvalidRequestContentException', message } };
  }
  return { ...target, type, event, payload: body.length === 0 ? '{}' : body };
}

/** The function an `Invoke` request's path names, if the endpoint serves it. */
function invokedFunction(
  request: IncomingMessage,
  { functions, functionArn }: InvokeContext,
): { name: string; target: LocalInvoker } | Refused {
  const url = new URL(request.url ?? '/', `http://${HOST}`);
  const path = request.method === 'POST' ? INVOKE_PATH.exec(url.pathname) : null;
  if (!path) {
    const message = `Only Invoke is served here, not ${request.method} ${url.pathname}`;
    return { refused: { status: 404, type: 'UnknownOperationException', message } };
  }
  const reference = decodeURIComponent(path[1] ?? '');
  const name = functionName(reference, url.searchParams.get('Qualifier'));
  const target = name !== undefined && Object.hasOwn(functions, name) ? functions[name] : undefined;
  if (name === undefined || !target) {
    const arn = reference.startsWith('arn:') ? reference : functionArn(reference);
    return {
      refused: { status: 404, type: 'ResourceNotFoundException', message: `Function not found: ${arn}` },
    };
  }
  return { name, target };
}

/** What a request that failed while served answers: a throttle as Lambda's 429, anything else a 500. */
function failureAnswer(error: unknown): ServiceErrorAnswer {
  if (error instanceof FunctionThrottledError) {
    return {
      status: 429,
      type: 'TooManyRequestsException',
      message: error.message,
      fields: { Reason: error.reason },
    };
  }
  return { status: 500, type: 'ServiceException', message: `The local endpoint failed: ${String(error)}` };
}

/** The `Event` invocations running in the background, each retried as Lambda retries it. */
class EventInvocations {
  readonly #running = new Set<Promise<unknown>>();
  readonly #stopping = new AbortController();
  readonly #options: LambdaInvokeEndpointOptions['asyncInvocation'];

  constructor(options: LambdaInvokeEndpointOptions['asyncInvocation']) {
    this.#options = options;
  }

  start({ name, target, event, payload }: InvokeCall, awsRequestId: string): void {
    const tracked = invokeAsynchronously({
      awsRequestId,
      invoke: (id) => target.invoke(event, id, payload),
      config: this.#options?.configOf?.(name),
      retryDelaysMs: this.#options?.retryDelaysMs,
      signal: this.#stopping.signal,
      onAttempt: (result, attempt) => {
        if (result.ok) return;
        const then = attempt.retrying ? 'to be retried' : 'given up';
        console.error(`${name} (Event ${awsRequestId}) failed, ${then}: ${JSON.stringify(result.error)}`);
      },
    }).catch(
      // Nobody waits for an Event invocation: say why it could not run, never reject unheard.
      (error: unknown) => console.error(`${name} (Event ${awsRequestId}) could not run: ${String(error)}`),
    );
    this.#running.add(tracked);
    void tracked.finally(() => this.#running.delete(tracked));
  }

  /** Cancels the retries not yet started and waits for the invocations running. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await Promise.allSettled(this.#running);
  }
}

/** The function a reference names, if it exists locally: only the `$LATEST` version does. */
function functionName(reference: string, qualifierParameter: string | null): string | undefined {
  const match = FUNCTION_REFERENCE.exec(reference);
  const qualifier = match?.[2] ?? qualifierParameter;
  return match && (!qualifier || qualifier === '$LATEST') ? match[1] : undefined;
}

interface HandlerOutcome {
  payload: string;
  functionError?: 'Unhandled';
}

/** The Invoke answer for an invocation: a result that is not JSON fails as Lambda's runtime fails it. */
function handlerOutcome(outcome: InvocationResult): HandlerOutcome {
  if (!outcome.ok) return unhandled(outcome.error);
  try {
    return { payload: JSON.stringify(outcome.result ?? null) ?? 'null' };
  } catch (error) {
    const errorMessage = `Unable to stringify response body: ${(error as Error).message}`;
    return unhandled({ errorType: 'Error', errorMessage, trace: [] });
  }
}

function unhandled(error: FunctionError): HandlerOutcome {
  return { payload: JSON.stringify(error), functionError: 'Unhandled' };
}

/** An AWS JSON error, as Lambda's API sends one: the SDK raises the matching typed exception. */
function sendServiceError(
  response: ServerResponse,
  { status, type, message, fields }: ServiceErrorAnswer,
): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  response
    .writeHead(status, {
      'Content-Type': 'application/json',
      'x-amzn-ErrorType': type,
      'x-amzn-RequestId': randomUUID(),
    })
    .end(JSON.stringify({ Type: status < 500 ? 'User' : 'Service', Message: message, ...fields }));
}

/** The body as text, or undefined once it exceeds `maxBytes`. */
async function readBody(request: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of request) {
    bytes += (chunk as Buffer).length;
    if (bytes > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function listen(server: ReturnType<typeof createServer>, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error) =>
      reject(
        new LambdaInvokeEndpointError(`the Lambda endpoint could not listen on ${HOST}:${port}`, {
          cause: error,
        }),
      ),
    );
    server.listen(port, HOST, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

import { randomUUID } from 'node:crypto';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { createRequire } from 'node:module';
import { pipeline } from 'node:stream';
import { text } from 'node:stream/consumers';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import { answerCloudFormation } from './cloudformation-api.js';
import { answerCloudWatch, CLOUDWATCH_TARGET_PREFIX, type SandboxFigures } from './cloudwatch-api.js';
import type { Deployment } from './deployment.js';
import { answerLambda, isLambdaControlPath } from './lambda-read-api.js';

/** The services behind the edge, by their own loopback endpoints. */
export interface EdgeTargets {
  dynamodb: string;
  sqs: string;
  lambda: string;
}

export interface EdgeEndpointOptions {
  targets: EdgeTargets;
  /**
   * What the sandbox deployed, for CloudFormation's and Lambda's read operations; undefined until
   * the app is provisioned (they then answer that the sandbox is still starting).
   */
  deployment?: () => Deployment | undefined;
  /**
   * What CloudWatch's GetMetricData answers from (cloudwatch-api.ts), once the functions run;
   * undefined until then, and on an edge without control.
   */
  figures?: () => SandboxFigures | undefined;
  /** Port to listen on (loopback only); 0, the default, takes a free one. */
  port?: number;
}

export interface EdgeEndpoint {
  /** Point the AWS SDK here with `AWS_ENDPOINT_URL` alone: DynamoDB, SQS and Lambda all answer. */
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** The edge cannot listen. */
export class EdgeEndpointError extends OncelyError {
  static override readonly errorName: string = 'EdgeEndpointError';
  readonly retryable = false;
}

const HOST = '127.0.0.1';
const HEALTH_PATH = '/_localstack/health';
// Through the package's own name, so that it is found from the source and from dist/ alike.
const VERSION = (createRequire(import.meta.url)('oncely/package.json') as { version: string }).version;
/** Headers of one connection, not of the request: each hop sets its own. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

type Route =
  | { service: keyof EdgeTargets }
  | { control: 'cloudformation' | 'lambda' | 'cloudwatch' }
  | { health: true }
  | { unknown: string };

/**
 * One loopback port that answers as LocalStack's single endpoint does, so that a client configured
 * with `AWS_ENDPOINT_URL` alone reaches every emulated service: each request goes, as a stream, to
 * the service it is for — told by its `X-Amz-Target` (DynamoDB, DynamoDB Streams, SQS's JSON
 * protocol), its path (Lambda's REST API), or the service its signature is scoped to (SQS's query
 * protocol, a form body with `Action=`). CloudFormation's and Lambda's read operations are answered
 * here, from what the sandbox deployed, so that tools that find resources through a stack's outputs
 * work as against AWS or LocalStack; their write operations are refused. CloudWatch's GetMetricData
 * answers the functions' and queues' figures the sandbox measures (cloudwatch-api.ts). `GET /_localstack/health`
 * reports the services; anything else gets an AWS-style error naming what the sandbox serves.
 */
export async function startEdgeEndpoint(options: EdgeEndpointOptions): Promise<EdgeEndpoint> {
  const agent = new Agent({ keepAlive: true });
  const server = createServer((request, response) => {
    const route = routeOf(request, options.deployment !== undefined);
    if ('health' in route) return sendHealth(request, response, options.deployment !== undefined);
    if ('unknown' in route) {
      const message =
        `The Oncely sandbox serves DynamoDB, DynamoDB Streams, SQS and Lambda here, not ${route.unknown}. ` +
        'Resources of other services in the app are listed as notEmulated in its ready file.';
      return sendError(request, response, 400, 'UnsupportedOperation', message);
    }
    if ('control' in route && route.control === 'cloudwatch') {
      const figures = options.figures?.();
      if (figures) return void sendCloudWatchAnswer(request, response, figures);
      return sendError(
        request,
        response,
        503,
        'ServiceUnavailable',
        'The sandbox is still starting its functions.',
      );
    }
    if ('control' in route) {
      const deployment = options.deployment?.();
      if (!deployment) {
        return sendError(
          request,
          response,
          503,
          'ServiceUnavailable',
          'The sandbox is still provisioning the app.',
        );
      }
      if (route.control === 'lambda') return sendLambdaAnswer(request, response, deployment);
      return void sendCloudFormationAnswer(request, response, deployment);
    }
    forward(request, response, options.targets[route.service], agent);
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', (error) =>
      reject(
        new EdgeEndpointError(`the edge could not listen on ${HOST}:${options.port ?? 0}`, { cause: error }),
      ),
    );
    server.listen(options.port ?? 0, HOST, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
  return {
    endpoint: `http://${HOST}:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // Clients keep connections alive, and a long poll holds one open: close() would wait for them.
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}

/** `control`: whether CloudFormation's and Lambda's read side is answered here (a sandbox's edge). */
function routeOf(request: IncomingMessage, control: boolean): Route {
  const path = new URL(request.url ?? '/', `http://${HOST}`).pathname;
  if (path === HEALTH_PATH)
    return request.method === 'GET' ? { health: true } : { unknown: `${request.method} ${path}` };
  const target = header(request.headers, 'x-amz-target');
  if (target !== undefined) {
    if (/^DynamoDB(Streams)?_20120810\./.test(target)) return { service: 'dynamodb' };
    if (target.startsWith('AmazonSQS.')) return { service: 'sqs' };
    if (control && target.startsWith(CLOUDWATCH_TARGET_PREFIX)) return { control: 'cloudwatch' };
    return { unknown: `X-Amz-Target ${target}` };
  }
  if (control && isLambdaControlPath(path)) return { control: 'lambda' };
  if (path.startsWith('/2015-03-31/functions')) return { service: 'lambda' };
  // SigV4 scopes a signature to one service: `Credential=KEY/DATE/REGION/SERVICE/aws4_request`.
  const signedFor = /Credential=[^/]*\/\d{8}\/[^/]*\/([^/]+)\//.exec(
    header(request.headers, 'authorization') ?? '',
  )?.[1];
  if (signedFor === 'sqs' || signedFor === 'dynamodb' || signedFor === 'lambda')
    return { service: signedFor };
  if (control && signedFor === 'cloudformation') return { control: 'cloudformation' };
  if (signedFor !== undefined) return { unknown: `the ${signedFor} service` };
  // An unsigned query-protocol request: only SQS speaks that protocol here.
  if (isForm(request)) return { service: 'sqs' };
  return { unknown: `${request.method} ${path}` };
}

/** Streams the request to `target` and its answer back, neither buffered. */
function forward(request: IncomingMessage, response: ServerResponse, target: string, agent: Agent): void {
  const { hostname, port } = new URL(target);
  const upstream = httpRequest(
    {
      host: hostname,
      port,
      method: request.method,
      path: request.url,
      headers: endToEnd(request.headers),
      agent,
    },
    (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
      pipeline(answer, response, () => undefined);
    },
  );
  upstream.on('error', (error) => {
    sendError(
      request,
      response,
      502,
      'ServiceUnavailable',
      `The sandbox's service at ${target} failed: ${error.message}`,
    );
  });
  pipeline(request, upstream, () => undefined);
}

async function sendCloudFormationAnswer(
  request: IncomingMessage,
  response: ServerResponse,
  deployment: Deployment,
): Promise<void> {
  const answer = answerCloudFormation(await text(request), deployment);
  response.writeHead(answer.status, { 'Content-Type': 'text/xml' }).end(answer.xml);
}

async function sendCloudWatchAnswer(
  request: IncomingMessage,
  response: ServerResponse,
  figures: SandboxFigures,
): Promise<void> {
  const target = header(request.headers, 'x-amz-target') ?? '';
  const answer = answerCloudWatch(target, await text(request), figures);
  response
    .writeHead(answer.status, {
      'Content-Type': 'application/x-amz-json-1.0',
      'x-amzn-RequestId': randomUUID(),
    })
    .end(answer.body);
}

function sendLambdaAnswer(request: IncomingMessage, response: ServerResponse, deployment: Deployment): void {
  request.resume();
  const answer = answerLambda(
    String(request.method),
    new URL(request.url ?? '/', `http://${HOST}`),
    deployment,
  );
  response
    .writeHead(answer.status, {
      'Content-Type': 'application/json',
      'x-amzn-RequestId': randomUUID(),
      ...(answer.errorType && { 'x-amzn-ErrorType': answer.errorType }),
    })
    .end(JSON.stringify(answer.body));
}

function sendHealth(request: IncomingMessage, response: ServerResponse, control: boolean): void {
  request.resume();
  const health = {
    services: {
      dynamodb: 'running',
      sqs: 'running',
      lambda: 'running',
      ...(control && { cloudformation: 'running', cloudwatch: 'running' }),
    },
    edition: 'oncely-sandbox',
    version: VERSION,
  };
  response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(health));
}

/** An error the SDK raises as a typed service exception with this message, in the protocol the request spoke. */
function sendError(
  request: IncomingMessage,
  response: ServerResponse,
  status: number,
  code: string,
  message: string,
): void {
  request.resume();
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const requestId = randomUUID();
  if (isForm(request)) {
    const text = message.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c] ?? c);
    response
      .writeHead(status, { 'Content-Type': 'text/xml', 'x-amzn-RequestId': requestId })
      .end(
        `<ErrorResponse><Error><Type>Sender</Type><Code>${code}</Code><Message>${text}</Message></Error>` +
          `<RequestId>${requestId}</RequestId></ErrorResponse>`,
      );
    return;
  }
  response
    .writeHead(status, {
      'Content-Type': 'application/x-amz-json-1.0',
      'x-amzn-ErrorType': code,
      'x-amzn-RequestId': requestId,
    })
    .end(JSON.stringify({ __type: code, message }));
}

function isForm(request: IncomingMessage): boolean {
  return (header(request.headers, 'content-type') ?? '').startsWith('application/x-www-form-urlencoded');
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));
}

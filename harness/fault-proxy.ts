import { randomUUID } from 'node:crypto';
import { Agent, createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ErrorAnswer, errorAnswer } from './aws-errors.js';
import { failOneEntry, withStaleHandle } from './entry-failure.js';
import {
  type ChaosRequest,
  type ChaosService,
  FAULT_KINDS,
  type Fault,
  type FaultKind,
  type FaultPlan,
  type JsonObject,
  noFaults,
} from './faults.js';
import { HeldRequests } from './held-requests.js';
import { forward, readBody, type UpstreamAnswer } from './http-forward.js';

const HOST = '127.0.0.1';

export interface FaultProxyOptions {
  /** Whose error shapes to answer with. */
  service: ChaosService;
  /** The emulator's endpoint, e.g. `http://127.0.0.1:8000`. */
  upstream: string;
  /** No faults by default. */
  plan?: FaultPlan;
}

export interface FaultProxyStats {
  /** Requests received by operation, faulted or not: an SDK retry counts again. */
  requests: Record<string, number>;
  faults: Record<FaultKind, number>;
  /** Requests held by `hang` now. */
  hung: number;
}

export interface FaultProxy {
  /** Point an SDK client's `endpoint` here. */
  readonly endpoint: string;
  /**
   * From now on, `plan` decides each request's fault, and `unanswered` hears of each request the
   * proxy sent on whose upstream answer never came (the connection failed: a stale pooled socket
   * on a loaded machine, say), with the fault it met. Such a request may have been applied, and its
   * caller saw no answer: a lost answer the plan did not decide. A `lose-answer` fault is the
   * plan's own and is not reported again.
   */
  setPlan(plan: FaultPlan, unanswered?: UnansweredWatcher): void;
  stats(): FaultProxyStats;
  /** Lets every hung request go on to the upstream, as a stalled caller that wakes up late. */
  releaseHung(): void;
  /** Resolves once `count` requests hang; rejects with `HungRequestTimeoutError` after `timeoutMs`. */
  waitForHung(count?: number, timeoutMs?: number): Promise<void>;
  /** Stops listening and drops held requests and every connection: their callers see a reset. */
  close(): Promise<void>;
}

/** Hears of a request sent on to the upstream whose answer never came back, and the fault it met. */
export type UnansweredWatcher = (request: ChaosRequest, fault: Fault | undefined) => void;

/**
 * An HTTP proxy on a free loopback port in front of one AWS JSON endpoint (DynamoDB Local or the
 * SQS emulator) that injects the faults a plan decides, per request, for the real SDK to meet.
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstream = new URL(options.upstream);
  const agent = new Agent({ keepAlive: true });
  const held = new HeldRequests();
  const requests: Record<string, number> = {};
  const faults = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>;
  let plan = options.plan ?? noFaults;
  let unanswered: UnansweredWatcher | undefined;
  let ordinal = 0;

  const decide = (incoming: IncomingMessage, body: Buffer) => {
    const operation = operationOf(incoming);
    requests[operation] = (requests[operation] ?? 0) + 1;
    ordinal += 1;
    const request: ChaosRequest = { service: options.service, operation, body: parseJson(body), ordinal };
    const fault = plan(request);
    if (fault) faults[fault.kind] += 1;
    return { request, fault, watcher: unanswered };
  };

  /** Whether a request may go on to the upstream: a hang or a delay can end with the proxy closing. */
  const mayGoOn = (fault: Fault | undefined): Promise<boolean> | boolean => {
    if (fault?.kind === 'hang') return held.hang();
    if (fault?.kind === 'delay') return held.delay(fault.ms);
    return true;
  };

  const handle = async (incoming: IncomingMessage, response: ServerResponse): Promise<void> => {
    const body = await readBody(incoming);
    const { request, fault, watcher } = decide(incoming, body);
    if (fault?.kind === 'fail-before') return sendError(response, errorAnswer(options.service, 'internal'));
    if (fault?.kind === 'throttle') return sendError(response, errorAnswer(options.service, 'throttling'));
    if (fault?.kind === 'unprocessed-keys') return sendUnprocessed(response, body);
    if (!(await mayGoOn(fault))) return void response.destroy();
    // The watcher of the plan that decided this request: a later plan is another run's.
    const send = (sent: Buffer) =>
      forward(upstream, agent, incoming, sent).catch((error: unknown) => {
        if (fault?.kind !== 'lose-answer') watcher?.(request, fault);
        throw error;
      });
    if (fault?.kind === 'fail-entry') {
      const answer = await failOneEntry(body, fault.entry, send);
      return fault.loseAnswer
        ? sendError(response, errorAnswer(options.service, 'internal'))
        : sendAnswer(response, answer);
    }
    const answer = await send(fault?.kind === 'stale-handle' ? withStaleHandle(body, fault.entry) : body);
    if (fault?.kind !== 'lose-answer') return sendAnswer(response, answer);
    if (fault.reset) return void response.destroy();
    sendError(response, errorAnswer(options.service, 'internal'));
  };

  // A request the proxy cannot carry (upstream gone, client gone) ends as a reset, as on a real network.
  const server = createServer(
    (incoming, response) => void handle(incoming, response).catch(() => response.destroy()),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, HOST, resolve);
  });
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://${HOST}:${port}`,
    setPlan: (next, watcher) => {
      plan = next;
      unanswered = watcher;
    },
    stats: () => ({ requests: { ...requests }, faults: { ...faults }, hung: held.hung }),
    releaseHung: () => held.releaseHung(),
    waitForHung: (count = 1, timeoutMs = 5_000) => held.waitForHung(count, timeoutMs),
    close: async () => {
      held.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      agent.destroy();
    },
  };
}

/** `X-Amz-Target: DynamoDB_20120810.PutItem` → `PutItem`. */
function operationOf(incoming: IncomingMessage): string {
  const target = String(incoming.headers['x-amz-target'] ?? '');
  return target.slice(target.indexOf('.') + 1) || 'Unknown';
}

function parseJson(body: Buffer): JsonObject {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
  } catch {
    return {};
  }
}

/** Answers a BatchGetItem as read nothing, every requested key handed back as unprocessed. */
function sendUnprocessed(response: ServerResponse, body: Buffer): void {
  const requested = (parseJson(body).RequestItems ?? {}) as JsonObject;
  const answer = JSON.stringify({
    Responses: Object.fromEntries(Object.keys(requested).map((table) => [table, []])),
    UnprocessedKeys: requested,
  });
  response.writeHead(200, {
    'content-type': 'application/x-amz-json-1.0',
    'x-amzn-requestid': randomUUID(),
    'content-length': Buffer.byteLength(answer),
  });
  response.end(answer);
}

function sendError(response: ServerResponse, answer: ErrorAnswer): void {
  response.writeHead(answer.status, { ...answer.headers, 'content-length': Buffer.byteLength(answer.body) });
  response.end(answer.body);
}

function sendAnswer(response: ServerResponse, answer: UpstreamAnswer): void {
  response.writeHead(answer.status, { ...answer.headers, 'content-length': answer.body.length });
  response.end(answer.body);
}

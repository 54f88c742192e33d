import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import { queueNameOf } from '../lambdas/common/tracing.js';
import { recordId } from '../lambdas/idempotency/keys.js';
import { linesAbout, messageTypesOf } from '../sandbox/function-log.js';
import { TraceFileReader } from '../sandbox/trace-file.js';
import { ConsoleActionError, consoleActions } from './console-actions.js';
import {
  deliveriesInLogLines,
  deliveriesInSpans,
  recentMessages,
  unsettledRecordIds,
} from './console-activity.js';
import type { StackMetrics } from './console-metrics.js';
import { pendingInTheOutbox, readOverview } from './console-overview.js';
import { CONSOLE_PAGE, CONSOLE_SCRIPT, CONSOLE_STYLE } from './console-page.js';
import type { ConsolePublisher } from './console-publish.js';
import { listDeadLetters } from './dead-letter-list.js';
import { listUnresolved } from './in-doubt-records.js';
import { readRecordToResolve } from './in-doubt-show.js';
import { type HistoryQuery, readMessageHistory } from './message-history.js';
import type { OperatorRecords } from './operator-records.js';
import { listPendingOutbox } from './outbox-list.js';
import { findOutbox } from './outbox-target.js';
import { recordsInProgress } from './record-batches.js';
import type { StackLogs } from './stack-logs.js';
import type { PipelineConnection } from './target.js';

/** A running console: where to open it, and how to stop it. */
export interface ConsoleServer {
  /** `http://127.0.0.1:PORT/`, and with actions `#token=…`: the address to open, which gives the page the token. */
  readonly url: string;
  /** The token its actions need; absent when it only reads. */
  readonly token?: string;
  close(): Promise<void>;
}

export interface ConsoleOptions {
  /**
   * The port on 127.0.0.1.
   * @default 0: a free port, chosen by the system
   */
  port?: number;
  /** The sandbox's trace file, whose spans a message's story shows; absent on a stack. */
  tracesFile?: string;
  /** The sandbox's function log, whose lines about a message its story shows; absent on a stack. */
  logsFile?: string;
  /**
   * A stack's CloudWatch Logs: the consumer's verdict lines, which the message list shows, and a
   * message's lines, which its story shows.
   * @default none: on a stack, no message list and no log lines
   */
  stackLogs?: StackLogs;
  /**
   * Whether the page may act (redrive, discard, resolve), each action with the token and after
   * asking. `oncely local` and a sandbox target allow them; a stack only with `--allow-actions`.
   * @default false: it only reads
   */
  actions?: boolean;
  /**
   * The pipeline's CloudWatch figures for the overview (a stack's, or the sandbox's edge's): its
   * functions' counts, its queues' oldest ages.
   * @default none: the overview shows the queues' counts alone
   */
  metrics?: () => Promise<StackMetrics>;
  /**
   * Publishes a message from the page (with `actions`): a sandbox's publisher.
   * @default none: the page has no form to publish
   */
  publisher?: ConsolePublisher;
}

/** The header the page sends the token in: a web page elsewhere can neither read it nor set it here without CORS. */
export const TOKEN_HEADER = 'x-oncely-token';
/** The most a request body may hold: an action's few fields. */
const MAX_BODY_BYTES = 64 * 1024;

/** What the DLQ view lists at most, and how long it waits for messages in flight elsewhere. */
const DLQ_LISTED = 100;
const DLQ_TIMEOUT_MS = 10_000;
const BODY_CHARACTERS = 300;
/** The oldest pending outbox messages the outbox view lists. */
const OUTBOX_LISTED = 100;

/** A request the console refuses, with the HTTP status it answers. */
class ConsoleRequestError extends OncelyError {
  static override readonly errorName: string = 'ConsoleRequestError';
  readonly retryable = false;
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Serves the console (docs/console.md) on 127.0.0.1 only: its page, script and style, the JSON it
 * reads from the pipeline — the overview, a message's story, the DLQ, the records to resolve — and,
 * with `actions`, the actions (`POST`, with the token). A request whose Host is not this address is
 * refused, so that a web page the user visits cannot reach it through a name it resolves to
 * 127.0.0.1 (DNS rebinding); one without the token cannot change anything.
 */
export async function startConsole(
  /** With `valkey`, the lease records cache's records beside the table's (`withLeaseRecords`). */
  pipeline: PipelineConnection & { valkey?: OperatorRecords },
  options: ConsoleOptions = {},
): Promise<ConsoleServer> {
  const hosts = new Set<string>();
  const token = options.actions ? randomBytes(24).toString('base64url') : undefined;
  const activity = options.tracesFile ? new TraceFileReader(options.tracesFile) : undefined;
  /** The overview, with a stack's CloudWatch figures when it has them. */
  const overviewWithMetrics = async () => {
    const [overview, metrics] = await Promise.all([readOverview(pipeline), options.metrics?.()]);
    if (!metrics) return overview;
    const queues = overview.queues.map((queue) => {
      const age = metrics.oldestAgeSeconds[queueNameOf(queue.url)];
      return age === undefined ? queue : { ...queue, oldestAgeSeconds: age };
    });
    return { ...overview, queues, functions: metrics.functions };
  };
  const routes: Record<string, (query: URLSearchParams) => Promise<unknown>> = {
    '/api/overview': async () => ({
      ...(await overviewWithMetrics()),
      actions: token !== undefined,
      publish: token !== undefined && options.publisher !== undefined,
    }),
    '/api/history': (query) =>
      readMessageHistory(pipeline, {
        ...historyQuery(query),
        spans: activity,
        logs: linesAboutKeys(options),
      }),
    '/api/dlq': () =>
      listDeadLetters(pipeline.sqs, pipeline.resources.dlqUrl, {
        limit: DLQ_LISTED,
        bodyCharacters: BODY_CHARACTERS,
        timeoutMs: DLQ_TIMEOUT_MS,
      }),
    '/api/in-doubt': () => listUnresolved(pipeline),
    '/api/outbox': () => listPendingOutbox(pipeline.dynamodb, findOutbox(pipeline), { limit: OUTBOX_LISTED }),
    // From the sandbox's spans, or a stack's verdict lines in CloudWatch Logs (docs/console.md).
    '/api/messages': async (query) => {
      const source = activity ? 'spans' : options.stackLogs ? 'logs' : undefined;
      const seen = activity
        ? activity.spans().then(deliveriesInSpans)
        : options.stackLogs?.verdicts().then(deliveriesInLogLines);
      if (!seen) return { source, messages: [], truncated: false };
      const [deliveries, pending] = await Promise.all([seen, pendingInTheOutbox(pipeline, OUTBOX_LISTED)]);
      const filter = Object.fromEntries(
        ['type', 'group', 'state', 'key'].map((name) => [name, query.get(name) ?? '']),
      );
      const inProgress = await recordsInProgress(pipeline, unsettledRecordIds(deliveries));
      return { source, ...recentMessages(deliveries, pending?.listing.messages ?? [], filter, inProgress) };
    },
    // The types the consumer said it handles, for the publish form (a sandbox's, once it ran).
    '/api/publish/types': async () => ({
      types:
        options.publisher && options.logsFile !== undefined
          ? await messageTypesOf(options.logsFile, pipeline.resources.consumerFunctionName)
          : [],
    }),
    // What `oncely in-doubt resolve` shows before it asks.
    '/api/in-doubt/record': (query) => readRecordToResolve(pipeline, query.get('id') ?? ''),
  };
  const actions = token ? consoleActions(pipeline, options.publisher) : {};
  const assets: Record<string, [string, string]> = {
    '/': ['text/html; charset=utf-8', CONSOLE_PAGE],
    '/console.js': ['text/javascript; charset=utf-8', CONSOLE_SCRIPT],
    '/console.css': ['text/css; charset=utf-8', CONSOLE_STYLE],
  };
  const server = createServer((request, response) => {
    void answer(request, response).catch((error: unknown) => {
      const status = error instanceof ConsoleRequestError ? error.status : statusOf(error);
      send(response, status, 'application/json', JSON.stringify({ error: (error as Error).message }));
    });
  });
  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!hosts.has(request.headers.host ?? ''))
      throw new ConsoleRequestError(421, 'Open the console at its own address.');
    const url = new URL(request.url ?? '/', 'http://console');
    if (request.method === 'POST') {
      const act = actions[url.pathname];
      if (!token)
        throw new ConsoleRequestError(403, 'This console only reads: start it with --allow-actions to act.');
      if (!sameToken(request.headers[TOKEN_HEADER], token))
        throw new ConsoleRequestError(403, 'An action needs the token the console printed with its address.');
      if (!act) throw new ConsoleRequestError(404, `No action ${url.pathname} here.`);
      return send(response, 200, 'application/json', JSON.stringify(await act(await jsonBody(request))));
    }
    if (request.method !== 'GET')
      throw new ConsoleRequestError(405, 'The console reads with GET and acts with POST.');
    const asset = assets[url.pathname];
    if (asset) return send(response, 200, asset[0], asset[1]);
    const route = routes[url.pathname];
    if (!route) throw new ConsoleRequestError(404, `No ${url.pathname} here.`);
    send(response, 200, 'application/json', JSON.stringify(await route(url.searchParams)));
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  hosts.add(`127.0.0.1:${port}`).add(`localhost:${port}`);
  return {
    url: `http://127.0.0.1:${port}/${token ? `#token=${token}` : ''}`,
    ...(token ? { token } : {}),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `?key=K&namespace=NS` (namespace repeatable), as `oncely history` takes them. */
function historyQuery(query: URLSearchParams): { key: string; recordIds: string[] } {
  const key = query.get('key')?.trim() ?? '';
  const namespaces = query
    .getAll('namespace')
    .map((namespace) => namespace.trim())
    .filter(Boolean);
  if (!key || namespaces.length === 0) {
    throw new ConsoleRequestError(
      400,
      'Give the message key and the namespace of the operation that handles it.',
    );
  }
  try {
    return { key, recordIds: namespaces.map((namespace) => recordId(namespace, key)) };
  } catch (error) {
    throw new ConsoleRequestError(400, (error as Error).message);
  }
}

/**
 * An action's refusal by the pipeline (a record changed meanwhile, a redrive running elsewhere, a
 * bad field) is the request's to fix: 409 or 400, with the command's own message. Else 500.
 */
function statusOf(error: unknown): number {
  if (error instanceof ConsoleActionError) return 400;
  return error instanceof OncelyError && !error.retryable ? 409 : 500;
}

/** Compared in constant time: how long a refusal takes says nothing of the token. */
function sameToken(given: string | string[] | undefined, token: string): boolean {
  if (typeof given !== 'string' || given.length !== token.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(token));
}

/** An action's JSON body, an object; anything else is refused. */
async function jsonBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  if (!String(request.headers['content-type']).startsWith('application/json'))
    throw new ConsoleRequestError(415, 'An action takes a JSON body.');
  let bytes = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of request) {
    bytes += (chunk as Buffer).length;
    if (bytes > MAX_BODY_BYTES) throw new ConsoleRequestError(413, 'An action body is a few fields.');
    chunks.push(chunk as Buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new ConsoleRequestError(400, 'The body is not JSON.');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ConsoleRequestError(400, 'The body is a JSON object.');
  return body as Record<string, unknown>;
}

function send(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    // Its own script and style only: nothing inline, nothing from elsewhere.
    'content-security-policy': "default-src 'self'; frame-ancestors 'none'",
    'x-content-type-options': 'nosniff',
  });
  response.end(body);
}

/** Where a story's log lines come from: the sandbox's function log, or a stack's CloudWatch Logs. */
function linesAboutKeys(options: ConsoleOptions): HistoryQuery['logs'] {
  const { logsFile } = options;
  if (logsFile !== undefined) return (key) => linesAbout(logsFile, key);
  return options.stackLogs?.linesAbout;
}

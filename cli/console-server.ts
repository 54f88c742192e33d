import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import { recordId } from '../lambdas/idempotency/keys.js';
import { readOverview } from './console-overview.js';
import { CONSOLE_PAGE, CONSOLE_SCRIPT, CONSOLE_STYLE } from './console-page.js';
import { listDeadLetters } from './dead-letter-list.js';
import { listUnresolved } from './in-doubt-records.js';
import { readMessageHistory } from './message-history.js';
import type { PipelineConnection } from './target.js';

/** A running console: where to open it, and how to stop it. */
export interface ConsoleServer {
  /** `http://127.0.0.1:PORT/`. */
  readonly url: string;
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
}

/** What the DLQ view lists at most, and how long it waits for messages in flight elsewhere. */
const DLQ_LISTED = 100;
const DLQ_TIMEOUT_MS = 10_000;
const BODY_CHARACTERS = 300;

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
 * Serves the console (docs/console.md) on 127.0.0.1 only: its page, script and style, and the JSON
 * it reads from the pipeline — the overview, a message's story, the DLQ, the records to resolve.
 * It changes nothing. A request whose Host is not this address is refused, so that a web page
 * the user visits cannot reach it through a name it resolves to 127.0.0.1 (DNS rebinding).
 */
export async function startConsole(
  pipeline: PipelineConnection,
  options: ConsoleOptions = {},
): Promise<ConsoleServer> {
  const hosts = new Set<string>();
  const routes: Record<string, (query: URLSearchParams) => Promise<unknown>> = {
    '/api/overview': () => readOverview(pipeline),
    '/api/history': (query) =>
      readMessageHistory(pipeline, { ...historyQuery(query), tracesFile: options.tracesFile }),
    '/api/dlq': () =>
      listDeadLetters(pipeline.sqs, pipeline.resources.dlqUrl, {
        limit: DLQ_LISTED,
        bodyCharacters: BODY_CHARACTERS,
        timeoutMs: DLQ_TIMEOUT_MS,
      }),
    '/api/in-doubt': () => listUnresolved(pipeline),
  };
  const assets: Record<string, [string, string]> = {
    '/': ['text/html; charset=utf-8', CONSOLE_PAGE],
    '/console.js': ['text/javascript; charset=utf-8', CONSOLE_SCRIPT],
    '/console.css': ['text/css; charset=utf-8', CONSOLE_STYLE],
  };
  const server = createServer((request, response) => {
    void answer(request, response).catch((error: unknown) => {
      const status = error instanceof ConsoleRequestError ? error.status : 500;
      send(response, status, 'application/json', JSON.stringify({ error: (error as Error).message }));
    });
  });
  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!hosts.has(request.headers.host ?? ''))
      throw new ConsoleRequestError(421, 'Open the console at its own address.');
    if (request.method !== 'GET') throw new ConsoleRequestError(405, 'The console only reads.');
    const url = new URL(request.url ?? '/', 'http://console');
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
    url: `http://127.0.0.1:${port}/`,
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

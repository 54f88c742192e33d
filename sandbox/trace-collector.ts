import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { dirname } from 'node:path';
import { text } from 'node:stream/consumers';
import { OncelyError } from '../lambdas/common/oncely-error.js';

/** The path of OTLP/HTTP's trace export. */
export const OTLP_TRACES_PATH = '/v1/traces';

const HOST = '127.0.0.1';

/** Where the sandbox's functions send their spans, and where they are kept. */
export interface TraceCollector {
  /** OTLP/HTTP JSON's trace endpoint: `http://127.0.0.1:<port>/v1/traces`. */
  readonly endpoint: string;
  /** One OTLP JSON export request per line, as the functions sent them (any OTLP tool reads it). */
  readonly file: string;
  /** Resolves once every export received so far is in the file. */
  flushed(): Promise<void>;
  stop(): Promise<void>;
}

/** The collector cannot listen, or its file cannot be written. */
export class TraceCollectorError extends OncelyError {
  static override readonly errorName: string = 'TraceCollectorError';
  readonly retryable = false;
}

/**
 * An OTLP/HTTP receiver on loopback, as the ADOT layer's collector is a function's on AWS: each
 * export (`POST /v1/traces`, JSON) is appended to `file` as one line, in the order received. The
 * file is emptied first: it holds this sandbox's spans only. Protobuf is refused (415): the
 * sandbox's functions, and the exporters it documents, send JSON.
 */
export async function startTraceCollector(file: string): Promise<TraceCollector> {
  try {
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, '');
  } catch (error) {
    throw new TraceCollectorError(`the trace file ${file} cannot be written`, { cause: error });
  }
  // Appends one at a time, so that concurrent exports never interleave within a line.
  let written: Promise<void> = Promise.resolve();
  const server = createServer((request, response) => {
    void receive(request, response, (line) => {
      written = written.then(() => appendFile(file, `${line}\n`));
      return written;
    });
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', (error) =>
      reject(new TraceCollectorError(`the trace collector could not listen on ${HOST}`, { cause: error })),
    );
    server.listen(0, HOST, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
  return {
    endpoint: `http://${HOST}:${port}${OTLP_TRACES_PATH}`,
    file,
    flushed: () => written,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }).then(() => written),
  };
}

async function receive(
  request: IncomingMessage,
  response: ServerResponse,
  append: (line: string) => Promise<void>,
): Promise<void> {
  const answer = (status: number, body: object) =>
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const path = new URL(request.url ?? '/', `http://${HOST}`).pathname;
  if (request.method !== 'POST' || path !== OTLP_TRACES_PATH) {
    return void answer(404, { message: `The sandbox's collector takes POST ${OTLP_TRACES_PATH} only.` });
  }
  if (!(request.headers['content-type'] ?? '').startsWith('application/json')) {
    return void answer(415, {
      message: 'Send OTLP/HTTP JSON (content-type: application/json), not protobuf.',
    });
  }
  let exported: unknown;
  try {
    exported = JSON.parse(await text(request));
  } catch {
    return void answer(400, { message: 'The body is not JSON.' });
  }
  if (!Array.isArray((exported as { resourceSpans?: unknown } | null)?.resourceSpans)) {
    return void answer(400, { message: 'An OTLP trace export has a resourceSpans array.' });
  }
  try {
    await append(JSON.stringify(exported));
    answer(200, {});
  } catch {
    answer(503, { message: 'The trace file could not be written.' });
  }
}

import http from 'node:http';
import https from 'node:https';
import { OncelyError, OutcomeUnknownError } from 'oncely/idempotency';

export interface HttpAnswer {
  status: number;
  body: string;
}

/** The request never fully left this process (e.g. connection refused): the remote cannot have acted on it. */
export class RequestNotSentError extends OncelyError {
  static override readonly errorName: string = 'RequestNotSentError';
  readonly retryable = true;
}

/**
 * POSTs JSON and resolves with the answer, whatever its status. A failure is typed by whether the
 * request had been sent: before, `RequestNotSentError` (nothing happened remotely); after — a
 * timeout, a reset — `OutcomeUnknownError` (the remote may have acted). `fetch` cannot tell these apart.
 */
export function postJson(
  url: string,
  body: unknown,
  options: { headers: Record<string, string>; timeoutMs: number },
): Promise<HttpAnswer> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    let sent = false;
    const fail = (error: Error) =>
      reject(
        sent
          ? new OutcomeUnknownError(
              `POST ${url} failed after the request was sent (${describe(error)}): the remote may have acted on it`,
              { cause: error },
            )
          : new RequestNotSentError(`POST ${url} failed before the request was sent (${describe(error)})`, {
              cause: error,
            }),
      );
    const request = (url.startsWith('https:') ? https : http).request(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(payload),
        ...options.headers,
      },
      signal: AbortSignal.timeout(options.timeoutMs),
      // A fresh connection per request: a kept-alive socket the server has just closed fails after
      // 'finish', which would park a notification that never arrived as IN_DOUBT.
      agent: false,
    });
    // 'finish': the whole request was handed to the OS, so the remote may receive and act on it.
    request.on('finish', () => (sent = true));
    request.on('error', fail);
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      // Once the status line is in, the remote has answered: a cut-off body does not make it unknown.
      const answer = () => resolve({ status, body: Buffer.concat(chunks).toString('utf8') });
      response.on('end', answer);
      response.on('error', answer);
    });
    request.end(payload);
  });
}

function describe(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code ? `${error.name} ${code}: ${error.message}` : `${error.name}: ${error.message}`;
}

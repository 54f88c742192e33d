import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the gateway does with a request: answer with a status, never answer, or cut the connection. */
export type GatewayBehaviour = number | 'hang' | 'reset';

export interface ReceivedRequest {
  idempotencyKey: string | undefined;
  contentType: string | undefined;
  body: unknown;
}

/**
 * A stand-in e-mail gateway on 127.0.0.1: it records every request it received in full and answers
 * as `behave` says for the n-th one (0-based). `hung` holds the requests it has not answered yet.
 */
export async function startGateway(behave: (index: number) => GatewayBehaviour) {
  const requests: ReceivedRequest[] = [];
  const hung: ServerResponse[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const behaviour = behave(requests.length);
      requests.push({
        idempotencyKey: request.headers['idempotency-key'] as string | undefined,
        contentType: request.headers['content-type'],
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      });
      if (behaviour === 'hang') hung.push(response);
      else if (behaviour === 'reset') request.socket.destroy();
      else response.writeHead(behaviour, { 'Content-Type': 'text/plain' }).end(`status ${behaviour}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/send`,
    requests,
    hung,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

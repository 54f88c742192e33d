import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

/**
 * How the gateway answers the first attempt of a notification; later attempts are accepted.
 * `hang` never answers and sends nothing; `send-then-hang` sends the e-mail, then never answers.
 */
export type FirstAnswer = 'accept' | 'unavailable' | 'hang' | 'send-then-hang';

/**
 * A stand-in e-mail gateway on loopback: it records every request by its Idempotency-Key and
 * answers as told — accept (202), be briefly unavailable (503 once), or hang without answering
 * (the call times out after the request went out: its outcome is unknown to the caller).
 */
export async function startEmailGateway(firstAnswer: (key: string) => FirstAnswer) {
  const attempts = new Map<string, number>();
  const accepted = new Map<string, number>();
  const firstAcceptedAt = new Map<string, number>();
  const accept = (key: string) => {
    accepted.set(key, (accepted.get(key) ?? 0) + 1);
    if (!firstAcceptedAt.has(key)) firstAcceptedAt.set(key, Date.now());
  };
  const hanging = new Set<ServerResponse>();
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    request.on('end', () => {
      const key = String(request.headers['idempotency-key'] ?? '');
      const attempt = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, attempt);
      const answer = attempt === 1 ? firstAnswer(key) : 'accept';
      if (answer === 'send-then-hang') accept(key);
      if (answer === 'hang' || answer === 'send-then-hang') {
        hanging.add(response);
        return;
      }
      if (answer === 'unavailable') {
        response.writeHead(503).end('try again later');
        return;
      }
      accept(key);
      response.writeHead(202, { 'Content-Type': 'application/json' }).end('{"queued":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/send`,
    /** Requests seen per key, every attempt counted. */
    attempts,
    /** E-mails accepted per key: more than 1 would be a duplicate e-mail. */
    accepted,
    /** When each key's first e-mail was accepted (epoch ms): when its effect took place. */
    firstAcceptedAt,
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of hanging) response.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

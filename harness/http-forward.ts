import { type Agent, type IncomingHttpHeaders, type IncomingMessage, request } from 'node:http';

/** An upstream's answer, read whole: AWS JSON bodies are small. */
export interface UpstreamAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Per-connection headers: they describe one hop, and Node sets its own for the next. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/** Sends a request on to `upstream` as it came (SigV4 headers and Host unchanged) and reads the answer. */
export function forward(
  upstream: URL,
  agent: Agent,
  incoming: IncomingMessage,
  body: Buffer,
): Promise<UpstreamAnswer> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...endToEnd(incoming.headers), 'content-length': String(body.length) },
        agent,
      },
      (answer) => {
        readBody(answer).then(
          (answerBody) =>
            resolve({
              status: answer.statusCode ?? 502,
              headers: endToEnd(answer.headers),
              body: answerBody,
            }),
          reject,
        );
      },
    );
    outgoing.once('error', reject);
    outgoing.end(body);
  });
}

export async function readBody(message: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of message) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The headers without hop-by-hop ones and without the length: each sender sets it for its body. */
function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name) && name !== 'content-length'),
  );
}

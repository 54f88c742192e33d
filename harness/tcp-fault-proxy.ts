import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback in front of a server that speaks a request-reply protocol (Valkey's
 * RESP), which can lose a reply: the request is forwarded and applied, and when its reply comes
 * back the proxy closes the client's connection instead of passing it on. The TCP twin of
 * fault-proxy.ts' `lose-answer` for HTTP: what a client sees when the network fails after the
 * server did the work.
 */
export interface TcpFaultProxy {
  /** The loopback port to connect to instead of the server's. */
  readonly port: number;
  /**
   * Loses the reply to the next `times` requests whose bytes `match` says yes to (as latin1 text:
   * RESP's names and arguments read as written). Counts the replies lost.
   */
  loseReplies(match: (request: string) => boolean, times?: number): { lost(): number };
  /**
   * A failover behind a primary endpoint: every connection is closed, and new ones go to
   * `upstreamPort` (the promoted replica), as ElastiCache points its primary endpoint at it.
   */
  failOver(upstreamPort: number): void;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

export async function startTcpFaultProxy(
  firstUpstreamPort: number,
  host = '127.0.0.1',
): Promise<TcpFaultProxy> {
  let upstreamPort = firstUpstreamPort;
  let fault: { match: (request: string) => boolean; remaining: number; lost: number } | undefined;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy()); // the other side's close ends the pair below
  };
  const server = createServer((client) => {
    const upstream = connect(upstreamPort, host);
    track(client);
    track(upstream);
    /** Set once a request whose reply is to be lost went upstream. */
    let losing = false;
    client.on('data', (chunk) => {
      if (fault && fault.remaining > 0 && fault.match(chunk.toString('latin1'))) {
        fault.remaining--;
        fault.lost++;
        losing = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!losing) {
        client.write(chunk);
        return;
      }
      // Applied upstream: its reply goes nowhere, and the client's connection with it.
      client.destroy();
      upstream.destroy();
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    loseReplies(match, times = 1) {
      const armed = { match, remaining: times, lost: 0 };
      fault = armed;
      return { lost: () => armed.lost };
    },
    failOver(port) {
      upstreamPort = port;
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

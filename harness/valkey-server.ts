import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Redis, type RedisOptions } from 'iovalkey';
import { freePort } from '../sandbox/free-port.js';
import { trackProcessGroup } from '../sandbox/process-group.js';

/** Debian's redis-server 7: the Valkey store's scripts run on it as on Valkey 7 and 8. */
export const REDIS_SERVER = '/usr/bin/redis-server';

/** A redis-server of the caller's own, on a free loopback port, without persistence. */
export interface ValkeyServer {
  port: number;
  /** The server process's id (the leader of its process group). */
  pid: number;
  /** A client of it; each is the caller's to `disconnect()`. */
  client(options?: RedisOptions): Redis;
  /** Stops the server and its process group. */
  stop(): Promise<void>;
}

/**
 * Starts redis-server in its own process group and resolves once it says it accepts connections.
 * The tests (test/support/valkey.ts) and the benchmarks (bench/valkey-vs-dynamodb.ts) start it so.
 */
export async function startValkey(): Promise<ValkeyServer> {
  const port = await freePort();
  const child = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const group = trackProcessGroup(child);
  const log: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout });
      lines.on('line', (line) => {
        log.push(line);
        if (line.includes('Ready to accept connections')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`redis-server exited (${code}):\n${log.join('\n')}`)));
      child.once('error', reject);
    });
  } catch (error) {
    await group.stop();
    throw error;
  }
  return {
    port,
    pid: group.pid,
    client: (options = {}) => new Redis({ host: '127.0.0.1', port, lazyConnect: false, ...options }),
    stop: () => group.stop(),
  };
}

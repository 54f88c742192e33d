import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Redis, type RedisOptions } from 'iovalkey';
import type { ValkeyScriptClient } from '../../lambdas/idempotency/valkey-store.js';
import { freePort } from '../../sandbox/free-port.js';
import { trackProcessGroup } from '../../sandbox/process-group.js';

/** Debian's redis-server 7: the Valkey store's scripts run on it as on Valkey 7 and 8. */
const REDIS_SERVER = '/usr/bin/redis-server';

/** A redis-server of one test file's own, on a free loopback port, without persistence. */
export interface ValkeyServer {
  port: number;
  /** A client of it; each is the caller's to `disconnect()`. */
  client(options?: RedisOptions): Redis;
  /** Stops the server and its process group. */
  stop(): Promise<void>;
}

/** Starts redis-server in its own process group and resolves once it says it accepts connections. */
export async function startValkey(): Promise<ValkeyServer> {
  const port = await freePort();
  const child = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const group = trackProcessGroup(child);
  const log: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      log.push(line);
      if (line.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}):\n${log.join('\n')}`)));
    child.once('error', reject);
  });
  return {
    port,
    client: (options = {}) => new Redis({ host: '127.0.0.1', port, lazyConnect: false, ...options }),
    stop: () => group.stop(),
  };
}

/** Counts a client's EVALSHA and EVAL calls: each is one round trip to the server. */
export function countScripts(client: ValkeyScriptClient) {
  const calls: { command: 'evalsha' | 'eval'; sha?: string }[] = [];
  const counted: ValkeyScriptClient = {
    evalsha: (sha, ...args) => {
      calls.push({ command: 'evalsha', sha });
      return client.evalsha(sha, ...args);
    },
    eval: (script, ...args) => {
      calls.push({ command: 'eval' });
      return client.eval(script, ...args);
    },
  };
  return {
    client: counted,
    calls,
    total: () => calls.length,
    reset: () => {
      calls.length = 0;
    },
  };
}

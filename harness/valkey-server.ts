import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis, type RedisOptions } from 'iovalkey';
import { freePort } from '../sandbox/free-port.js';
import { trackProcessGroup } from '../sandbox/process-group.js';

/** Debian's redis-server 7: the Valkey store's scripts run on it as on Valkey 7 and 8. */
export const REDIS_SERVER = '/usr/bin/redis-server';

/**
 * A redis-server of a test's or a run's own, on a free loopback port, in a folder of its own: no
 * periodic snapshot, no AOF; a snapshot only when a client sends `SAVE`.
 */
export interface ValkeyServer {
  port: number;
  /** The server process's id (the leader of its process group); a restart gives it another. */
  readonly pid: number;
  /** A client of it; each is the caller's to `disconnect()`. */
  client(options?: RedisOptions): Redis;
  /**
   * A crash and a restart: kill -9, then the server again on its port, from the snapshot its last
   * `SAVE` wrote (empty without one). Every write since is gone, as after a restart of a node whose
   * persistence is periodic.
   */
  crashAndRestart(): Promise<void>;
  /** SIGSTOP: it keeps its connections but answers nothing, nor acknowledges its primary's stream. */
  freeze(): void;
  /** SIGCONT: it goes on where it stopped. */
  thaw(): void;
  /** Stops the server and its process group, and deletes its folder. */
  stop(): Promise<void>;
}

export interface ValkeyServerOptions {
  /**
   * Start as a replica of this server (`--replicaof`).
   * @default none: a primary
   */
  replicaOf?: ValkeyServer;
}

/** Starts redis-server in its own process group and resolves once it says it accepts connections. */
export async function startValkey(options: ValkeyServerOptions = {}): Promise<ValkeyServer> {
  const port = await freePort();
  // Its own folder: a replica writes the data it syncs there, and a server loads whatever dump.rdb
  // it finds in its folder when it starts.
  const folder = mkdtempSync(join(tmpdir(), 'oncely-valkey-'));
  const args = [
    ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    // A replica (re)joining is synced at once, not after the 5 s a primary waits for more to join.
    ...['--repl-diskless-sync-delay', '0'],
    ...['--dir', folder, '--dbfilename', 'dump.rdb'],
    ...(options.replicaOf ? ['--replicaof', '127.0.0.1', String(options.replicaOf.port)] : []),
  ];
  let running = await spawnReady(args);
  return {
    port,
    get pid() {
      return running.group.pid;
    },
    client: (clientOptions = {}) =>
      new Redis({ host: '127.0.0.1', port, lazyConnect: false, ...clientOptions }),
    async crashAndRestart() {
      signal(running.child, 'SIGKILL');
      await running.group.stop();
      running = await spawnReady(args);
    },
    freeze: () => signal(running.child, 'SIGSTOP'),
    thaw: () => signal(running.child, 'SIGCONT'),
    async stop() {
      signal(running.child, 'SIGCONT'); // a frozen server would hold its SIGTERM until the grace runs out
      await running.group.stop();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

async function spawnReady(args: string[]) {
  const child = spawn(REDIS_SERVER, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
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
    // One that never became ready is not left running.
    await group.stop();
    throw error;
  }
  return { child, group };
}

/** Signals the server's process group (the server alone: it starts no other). */
function signal(child: ChildProcess, name: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, name);
  } catch {
    // ESRCH: already gone.
  }
}

/**
 * Waits until `replicas` replicas hold everything `primary` holds: a write of its own, then WAIT
 * for it, which the replication stream orders after every earlier write. A replica still syncing
 * acknowledges once it is through; `timeoutMs` bounds the wait.
 */
export async function replicasCaughtUp(primary: Redis, replicas: number, timeoutMs = 10_000): Promise<void> {
  await primary.set('oncely-test:caught-up', String(Date.now()));
  const acknowledged = await primary.wait(replicas, timeoutMs);
  if (acknowledged < replicas) {
    throw new Error(`${acknowledged} of ${replicas} replicas caught up within ${timeoutMs} ms`);
  }
}

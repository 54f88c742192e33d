import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Redis } from 'iovalkey';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import { assertToolchain } from '../lib/constructs/missing-toolchain.js';
import { freePort } from './free-port.js';
import { trackProcessGroup } from './process-group.js';

/** The server the sandbox runs a serverless cache on: Redis OSS 7 (Debian's `redis-server`), or Valkey's. */
export const REDIS_SERVER_COMMAND = 'redis-server';
/** CLUSTER ADDSLOTSRANGE, with which one node takes every slot, is Redis 7's. */
export const MINIMUM_REDIS_MAJOR = 7;

const HOST = '127.0.0.1';
/** Every hash slot of a cluster. */
const LAST_SLOT = 16383;
/** Raised before a serverless cache is started when no usable redis-server (or openssl) is on PATH. */
export class ValkeyServerMissingError extends OncelyError {
  static override readonly errorName: string = 'ValkeyServerMissingError';
  readonly retryable = false;
}

/** Raised when the local server of a serverless cache exits or does not answer during start-up. */
export class ValkeyServerStartError extends OncelyError {
  static override readonly errorName: string = 'ValkeyServerStartError';
  readonly retryable = false;
}

/** An `AWS::ElastiCache::User` of a cache's user group: who may connect, and to do what. */
export interface CacheUser {
  /** The connection's username (`UserName`; an IAM user's is its id). */
  userName: string;
  /** The user's access string (`AccessString`), a Redis ACL rule list. */
  accessString: string;
}

/** A serverless cache of the template, to run locally. */
export interface ServerlessCacheSpec {
  stackName: string;
  logicalId: string;
  /** `ServerlessCacheName`. */
  name: string;
  /** The users of its user group. */
  users: CacheUser[];
}

/** Where a local serverless cache answers. */
export interface LocalCacheEndpoint {
  address: string;
  port: number;
  /** Leader of the server's process group. */
  pid: number;
}

/** Starts a serverless cache's server: what provisioning is given to resolve a cache's attributes. */
export type StartServerlessCache = (spec: ServerlessCacheSpec) => Promise<LocalCacheEndpoint>;

/**
 * The servers standing for the app's `AWS::ElastiCache::ServerlessCache`s: one redis-server each, on
 * loopback, in its own process group, in cluster mode with one node owning every slot (the
 * consumer's cluster client runs unchanged), over TLS only, with a certificate made at the first
 * start, which `caCertificateFile` names for the functions (`NODE_EXTRA_CA_CERTS`), and each user of
 * the cache's user group with `nopass`: the IAM token the consumer sends as its password is not
 * checked. `stop()` stops them all and removes the certificate.
 */
export class LocalServerlessCaches {
  readonly #servers: { pid: number; stop: () => Promise<void> }[] = [];
  #directory: string | undefined;

  /** The certificate the servers present; undefined until one started. */
  get caCertificateFile(): string | undefined {
    return this.#directory && join(this.#directory, 'cert.pem');
  }

  /** The caches started, in order. */
  readonly started: (ServerlessCacheSpec & LocalCacheEndpoint)[] = [];

  readonly start: StartServerlessCache = async (spec) => {
    const server = assertRedisServer(spec);
    assertToolchain(`oncely local, for ${describe(spec)},`, ['iovalkey']);
    const directory = this.#certificateDirectory(spec);
    const [port, busPort] = [await freePort(), await freePort()];
    const child = spawn(server, serverArguments(directory, spec, port, busPort), {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const group = trackProcessGroup(child);
    this.#servers.push(group);
    const log: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new ValkeyServerStartError(`${server} did not start within 10 s:\n${log.join('\n')}`)),
        10_000,
      );
      createInterface({ input: child.stdout }).on('line', (line) => {
        log.push(line);
        if (line.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.stderr.on('data', (chunk: Buffer) => log.push(chunk.toString()));
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new ValkeyServerStartError(`${server} exited (${code ?? signal}):\n${log.join('\n')}`));
      });
    });
    await configure(port, readFileSync(join(directory, 'cert.pem')), spec.users);
    const endpoint = { address: HOST, port, pid: group.pid };
    this.started.push({ ...spec, ...endpoint });
    return endpoint;
  };

  /** Stops every server, then removes the certificate. */
  async stop(): Promise<void> {
    await Promise.all(this.#servers.map((server) => server.stop()));
    if (this.#directory) rmSync(this.#directory, { recursive: true, force: true });
  }

  /** The directory of the servers' files, with a throwaway self-signed certificate for 127.0.0.1. */
  #certificateDirectory(spec: ServerlessCacheSpec): string {
    if (this.#directory) return this.#directory;
    const directory = mkdtempSync(join(tmpdir(), 'oncely-valkey-'));
    this.#directory = directory;
    const made = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-subj',
        `/CN=${HOST}`,
        '-addext',
        `subjectAltName=IP:${HOST}`,
        '-keyout',
        join(directory, 'key.pem'),
        '-out',
        join(directory, 'cert.pem'),
      ],
      { encoding: 'utf8' },
    );
    if (made.error) {
      throw new ValkeyServerMissingError(
        `oncely local makes a certificate for ${describe(spec)} with openssl, which was not found: ` +
          'install it, e.g. `sudo apt-get install openssl`, then run the command again.',
      );
    }
    if (made.status !== 0) throw new ValkeyServerStartError(`openssl failed:\n${made.stderr}`);
    return directory;
  }
}

function describe(spec: ServerlessCacheSpec): string {
  return `the serverless cache ${spec.logicalId} of stack ${spec.stackName}`;
}

/** The redis-server to run, once it is known to be Redis 7 or newer (or Valkey). */
function assertRedisServer(spec: ServerlessCacheSpec): string {
  const install =
    'Install it, e.g. `sudo apt-get install redis-server` on Debian/Ubuntu (Redis 7; its service need not run) ' +
    'or `brew install valkey` on macOS, then run the command again.';
  const result = spawnSync(REDIS_SERVER_COMMAND, ['--version'], { encoding: 'utf8' });
  if (result.error) {
    throw new ValkeyServerMissingError(
      `oncely local runs ${describe(spec)} (leaseRecords: 'valkey') on a local \`${REDIS_SERVER_COMMAND}\`, ` +
        `which is not on PATH. ${install}`,
    );
  }
  const major = Number(/\bv=(\d+)\./.exec(result.stdout)?.[1]);
  if (!(major >= MINIMUM_REDIS_MAJOR)) {
    throw new ValkeyServerMissingError(
      `oncely local runs ${describe(spec)} on redis-server ${MINIMUM_REDIS_MAJOR} or newer; ` +
        `\`${REDIS_SERVER_COMMAND} --version\` says: ${result.stdout.trim()}. ${install}`,
    );
  }
  return REDIS_SERVER_COMMAND;
}

/**
 * In memory, on loopback, TLS only (no plain port; clients' certificates not asked for), in cluster
 * mode: the cluster bus on its own port, TLS too, so that CLUSTER SLOTS names the TLS port, and the
 * node announcing 127.0.0.1.
 */
function serverArguments(
  directory: string,
  spec: ServerlessCacheSpec,
  port: number,
  busPort: number,
): string[] {
  return [
    ...['--bind', HOST, '--port', '0', '--tls-port', String(port)],
    ...['--tls-cert-file', join(directory, 'cert.pem'), '--tls-key-file', join(directory, 'key.pem')],
    // The CA file is the certificate itself: redis-server wants one with a TLS cluster bus.
    ...[
      '--tls-ca-cert-file',
      join(directory, 'cert.pem'),
      '--tls-auth-clients',
      'no',
      '--tls-cluster',
      'yes',
    ],
    ...['--cluster-enabled', 'yes', '--cluster-port', String(busPort), '--cluster-announce-ip', HOST],
    ...['--cluster-config-file', join(directory, `nodes-${spec.stackName}-${spec.logicalId}.conf`)],
    ...['--dir', directory, '--save', '', '--appendonly', 'no'],
  ];
}

/** Gives the node every slot and the cache's users, then waits for the cluster to say it is ok. */
async function configure(port: number, ca: Buffer, users: readonly CacheUser[]): Promise<void> {
  const { Redis } = await import('iovalkey');
  const admin: Redis = new Redis({
    host: HOST,
    port,
    tls: { ca },
    lazyConnect: true,
    maxRetriesPerRequest: 0,
  });
  try {
    await admin.connect();
    await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', String(LAST_SLOT));
    for (const { userName, accessString } of users) {
      const rules = accessString.split(/\s+/).filter(Boolean);
      await admin.call('ACL', 'SETUSER', userName, 'reset', 'nopass', ...rules);
    }
    const deadline = Date.now() + 10_000;
    while (!String(await admin.call('CLUSTER', 'INFO')).includes('cluster_state:ok')) {
      if (Date.now() > deadline) throw new ValkeyServerStartError('the one-node cluster did not become ok');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    admin.disconnect();
  }
}

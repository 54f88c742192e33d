import type { Cluster, ClusterNode, ClusterOptions, Redis } from 'iovalkey';
import { OncelyConfigurationError } from '../common/configuration-error.js';
import { elastiCacheIamToken, type SigningCredentials } from '../idempotency/elasticache-iam-token.js';
import type { ValkeyScriptClient } from '../idempotency/valkey-store.js';

/** Where the consumer's lease records cache is and who it connects as (`IDEMPOTENCY_VALKEY_*`). */
export interface ElastiCacheValkeyOptions {
  host: string;
  port: number;
  /** The IAM-enabled ElastiCache user: the connection's username. */
  userId: string;
  /** The serverless cache's name, which the token is signed for. */
  cacheName: string;
  region: string;
  /** The function's credentials, resolved anew when the client reconnects (the SDK's provider caches them). */
  credentials: () => Promise<SigningCredentials>;
  /** @default Date.now */
  now?: () => number;
  /** @default `import('iovalkey')`'s `Cluster`; tests pass a fake */
  loadClient?: () => Promise<ClusterClass>;
}

/** iovalkey's `Cluster` constructor: a serverless cache speaks the cluster protocol. */
export type ClusterClass = new (nodes: ClusterNode[], options: ClusterOptions) => Cluster;

/**
 * A Valkey client of an ElastiCache Serverless cache with IAM authentication, for the consumer's
 * default `ValkeyIdempotencyStore`: iovalkey's cluster client (a serverless cache is only offered in
 * cluster mode, and may answer MOVED), imported on the first command (a consumer whose records stay
 * in DynamoDB never loads it), over TLS (always on for serverless), its password a 15-minute IAM
 * token (`elastiCacheIamToken`) signed for each connection: the first to each node, and every
 * reconnection, including the one after ElastiCache closes a connection at 12 hours.
 */
export function elastiCacheValkeyClient(options: ElastiCacheValkeyOptions): ValkeyScriptClient {
  let client: Promise<Cluster> | undefined;
  const connected = () => {
    client ??= connect(options);
    // A failed import or credential read is tried again by the next command, not remembered.
    client.catch(() => {
      client = undefined;
    });
    return client;
  };
  return {
    evalsha: async (...args) => (await connected()).evalsha(...args),
    eval: async (...args) => (await connected()).eval(...args),
  };
}

async function connect(options: ElastiCacheValkeyOptions): Promise<Cluster> {
  const ClusterClient = await (options.loadClient ?? loadIovalkey)();
  const now = options.now ?? Date.now;
  let credentials = await options.credentials();
  const token = () =>
    elastiCacheIamToken({
      cacheName: options.cacheName,
      userId: options.userId,
      region: options.region,
      credentials,
      now: now(),
    });
  // The next credentials, resolved meanwhile (the function's outlive a token by hours).
  const refreshCredentials = () =>
    options.credentials().then(
      (fresh) => {
        credentials = fresh;
      },
      () => {},
    );
  const cluster = new ClusterClient([{ host: options.host, port: options.port }], {
    // The endpoint's name, not its address: TLS checks the certificate against it.
    dnsLookup: (address, callback) => callback(null, address),
    redisOptions: {
      username: options.userId,
      // Read as each node's connection (and the slots refresher's) is made: a token signed then.
      get password() {
        return token();
      },
      tls: {},
    },
  });
  // The cluster replaces a lost node's connection (its nodes do not retry), which the getter above
  // signs for; a node that does reconnect reads `options.password` after this event: a fresh token.
  cluster.on('+node', (node: Redis) => {
    node.on('reconnecting', () => {
      node.options.password = token();
      void refreshCredentials();
    });
  });
  return cluster;
}

async function loadIovalkey(): Promise<ClusterClass> {
  try {
    return (await import('iovalkey')).Cluster;
  } catch (error) {
    throw new OncelyConfigurationError(
      ['IDEMPOTENCY_VALKEY_ENDPOINT'],
      'IDEMPOTENCY_VALKEY_ENDPOINT is set, so the consumer keeps its lease records in Valkey, through iovalkey, ' +
        `which it cannot import (${(error as Error).message}): add iovalkey to the function's dependencies.`,
    );
  }
}

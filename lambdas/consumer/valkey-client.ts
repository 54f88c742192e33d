import type { Redis, RedisOptions } from 'iovalkey';
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
  /** @default `import('iovalkey')`'s `Redis`; tests pass a fake */
  loadClient?: () => Promise<new (options: RedisOptions) => Redis>;
}

/**
 * A Valkey client of an ElastiCache Serverless cache with IAM authentication, for the consumer's
 * default `ValkeyIdempotencyStore`: iovalkey, imported on the first command (a consumer whose records
 * stay in DynamoDB never loads it), over TLS (always on for serverless), its password a 15-minute
 * IAM token (`elastiCacheIamToken`) signed at each connection: the first, and every reconnection,
 * including the one after ElastiCache closes a connection at 12 hours.
 */
export function elastiCacheValkeyClient(options: ElastiCacheValkeyOptions): ValkeyScriptClient {
  let client: Promise<Redis> | undefined;
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

async function connect(options: ElastiCacheValkeyOptions): Promise<Redis> {
  const RedisClient = await (options.loadClient ?? loadIovalkey)();
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
  const client = new RedisClient({
    host: options.host,
    port: options.port,
    username: options.userId,
    password: token(),
    tls: { servername: options.host },
  });
  // iovalkey reads `options.password` at each connect, which follows this event: a fresh token then,
  // with the credentials last resolved, and the next ones resolved meanwhile (they outlive a token).
  client.on('reconnecting', () => {
    client.options.password = token();
    options.credentials().then(
      (fresh) => {
        credentials = fresh;
      },
      () => {},
    );
  });
  return client;
}

async function loadIovalkey(): Promise<new (options: RedisOptions) => Redis> {
  try {
    return (await import('iovalkey')).Redis;
  } catch (error) {
    throw new OncelyConfigurationError(
      ['IDEMPOTENCY_VALKEY_ENDPOINT'],
      'IDEMPOTENCY_VALKEY_ENDPOINT is set, so the consumer keeps its lease records in Valkey, through iovalkey, ' +
        `which it cannot import (${(error as Error).message}): add iovalkey to the function's dependencies.`,
    );
  }
}

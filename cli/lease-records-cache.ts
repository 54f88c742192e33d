import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { type ConnectionOptions, checkServerIdentity } from 'node:tls';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Cluster, ClusterNode, ClusterOptions, Redis } from 'iovalkey';
import { SERVERLESS_KEY_PREFIX } from '../lambdas/consumer/environment.js';
import { elastiCacheIamToken } from '../lambdas/idempotency/elasticache-iam-token.js';
import type { ValkeyScriptClient } from '../lambdas/idempotency/valkey-store.js';
import type { LeaseRecordsCacheOutputs } from '../lib/constructs/pipeline-outputs.js';
import {
  PipelineUnreachableError,
  ReadyFileError,
  ValkeyClientMissingError,
  ValkeyEndpointRequiredError,
} from './operations-errors.js';
import type { ReadyFile } from './ready-file.js';
import { ValkeyOperatorRecords } from './valkey-operator-records.js';

/**
 * A pipeline's lease records cache (`leaseRecords: 'valkey'`, DESIGN §3.1) as the operator commands
 * reach it: `open()` connects (only `oncely in-doubt` and `oncely history` do, and only then is
 * iovalkey imported), or fails saying what is missing.
 */
export interface LeaseRecordsCache {
  /** Names it in messages: "the lease records cache NAME of stack S". */
  readonly name: string;
  open(): Promise<OpenedLeaseRecordsCache>;
}

export interface OpenedLeaseRecordsCache {
  readonly records: ValkeyOperatorRecords;
  close(): void;
}

/**
 * `pipeline` with its lease records cache's records as `valkey` (what `oncely in-doubt`, `oncely
 * history` and the console read beside the table), connected; `close()` closes the cache's client
 * and then the pipeline's. A pipeline without a cache is given back as it is. If the cache cannot be
 * opened (no `--valkey-endpoint` on a stack, no iovalkey), the pipeline's clients are closed and the
 * error thrown.
 */
export async function withLeaseRecords<P extends { leaseRecordsCache?: LeaseRecordsCache; close(): void }>(
  pipeline: P,
): Promise<P & { valkey?: ValkeyOperatorRecords }> {
  if (!pipeline.leaseRecordsCache) return pipeline;
  let cache: OpenedLeaseRecordsCache;
  try {
    cache = await pipeline.leaseRecordsCache.open();
  } catch (error) {
    pipeline.close();
    throw error;
  }
  return {
    ...pipeline,
    valkey: cache.records,
    close: () => {
      cache.close();
      pipeline.close();
    },
  };
}

/** How a client gets to the cache: where it connects, as whom, and how TLS checks it. */
interface CacheConnection {
  name: string;
  /** Where the client connects: the cache's endpoint, or the operator's tunnel to it. */
  connectTo: { host: string; port: number };
  userId: string;
  /** What signs each connection's password (a connection made later, by a long-lived console, too). */
  password: () => Promise<() => string>;
  tls: ConnectionOptions;
  /** What to check when nothing answers. */
  unreachableHint: string;
}

/** iovalkey's `Cluster` constructor. */
type ClusterClass = new (nodes: ClusterNode[], options: ClusterOptions) => Cluster;

/**
 * The sandbox's cache: a local redis-server at the endpoint its outputs name, TLS with the sandbox's
 * certificate (its ready file's `caches[].caCertificateFile`), as the cache's user with any password
 * (the sandbox checks no IAM token).
 */
export function sandboxLeaseRecordsCache(
  readyFile: string,
  file: ReadyFile,
  cache: LeaseRecordsCacheOutputs,
): LeaseRecordsCache {
  const name = `the lease records cache ${cache.name} of the sandbox of ${readyFile}`;
  return {
    name,
    open: async () => {
      const local = file.caches?.find((each) => each.name === cache.name);
      if (!local) {
        throw new ReadyFileError(
          `${readyFile} lists no cache ${cache.name}, which the pipeline's outputs name. Restart the sandbox ` +
            'with `oncely local --ready-file PATH` to write a current ready file.',
        );
      }
      return openCache({
        name,
        connectTo: cache.endpoint,
        userId: cache.userId,
        password: async () => () => 'sandbox',
        tls: { ca: readFileSync(local.caCertificateFile) },
        unreachableHint: `Is the sandbox running? Start it with \`oncely local --ready-file ${readyFile}\`.`,
      });
    },
  };
}

/**
 * A deployed stack's cache, inside its VPC: reached through `tunnel` (`--valkey-endpoint`), TLS
 * checked against the cache's own name, as the cache's user with an IAM token signed with the
 * operator's credentials (the DynamoDB client's: the default chain) for the stack's region.
 * Without a tunnel, `open()` throws `ValkeyEndpointRequiredError`: never the table's records alone.
 */
export function stackLeaseRecordsCache(
  stackName: string,
  cache: LeaseRecordsCacheOutputs,
  tunnel: { host: string; port: number } | undefined,
  dynamodb: DynamoDBClient,
): LeaseRecordsCache {
  const name = `the lease records cache ${cache.name} of stack ${stackName}`;
  const { host, port } = cache.endpoint;
  return {
    name,
    open: async () => {
      if (!tunnel) {
        throw new ValkeyEndpointRequiredError(
          `Stack ${stackName} keeps its lease records in Valkey: ${name}, at ${host}:${port}, inside the ` +
            "stack's VPC, which this machine cannot reach. Open a tunnel to it (e.g. SSM port forwarding " +
            'through an instance in the VPC: docs/operations.md, "Lease records in Valkey") and give its ' +
            'local end with --valkey-endpoint HOST:PORT, e.g. --valkey-endpoint localhost:6379. Nothing was ' +
            'read or changed.',
        );
      }
      return openCache({
        name,
        connectTo: tunnel,
        userId: cache.userId,
        // A 15-minute token, signed as each connection is made: the console's outlive one.
        password: async () => {
          const [region, credentials] = await Promise.all([
            dynamodb.config.region(),
            dynamodb.config.credentials(),
          ]);
          return () =>
            elastiCacheIamToken({
              cacheName: cache.name,
              userId: cache.userId,
              region,
              credentials,
              now: Date.now(),
            });
        },
        // The certificate names the cache's endpoint, not the tunnel's end.
        tls: {
          ...(isIP(host) ? {} : { servername: host }),
          checkServerIdentity: (_tunnelHost, certificate) => checkServerIdentity(host, certificate),
        },
        unreachableHint:
          `Is the tunnel to ${host}:${port} open and listening at ${tunnel.host}:${tunnel.port} ` +
          '(docs/operations.md, "Lease records in Valkey")?',
      });
    },
  };
}

/** Connects iovalkey's cluster client (a serverless cache is a cluster) as `connection` says. */
async function openCache(connection: CacheConnection): Promise<OpenedLeaseRecordsCache> {
  const ClusterClient = await loadCluster(connection.name);
  const { host, port } = connection.connectTo;
  const password = await connection.password();
  const cluster = new ClusterClient([{ host, port }], {
    // The endpoint's name, not its address: TLS checks the certificate against it.
    dnsLookup: (address, callback) => callback(null, address),
    // Whatever node the cache names (its own endpoint, in the VPC), it is reached where we connect.
    natMap: () => ({ host, port }),
    // An operator's command: a few tries, then the error, rather than waiting for ever.
    clusterRetryStrategy: (times) => (times > 2 ? null : 100 * times),
    redisOptions: {
      username: connection.userId,
      // Read as each node's connection is made (the consumer's client does the same).
      get password() {
        return password();
      },
      tls: connection.tls,
      connectTimeout: 10_000,
    },
  });
  cluster.on('error', () => undefined);
  // A node that reconnects (the console lives longer than a token) reads its options' password.
  cluster.on('+node', (node: Redis) => {
    node.on('reconnecting', () => {
      node.options.password = password();
    });
  });
  const unreachable = (error: unknown) => {
    // The server's own answers (NOSCRIPT, NOPERM, a script's error) are what they say.
    if ((error as Error | undefined)?.name === 'ReplyError') return error;
    return new PipelineUnreachableError(
      `Cannot reach ${connection.name} at ${host}:${port} (${(error as Error).message}). ${connection.unreachableHint}`,
      { cause: error },
    );
  };
  const client: ValkeyScriptClient = {
    evalsha: (...args) =>
      cluster.evalsha(...args).catch((error: unknown) => Promise.reject(unreachable(error))),
    eval: (...args) => cluster.eval(...args).catch((error: unknown) => Promise.reject(unreachable(error))),
  };
  return {
    records: new ValkeyOperatorRecords(client, SERVERLESS_KEY_PREFIX),
    close: () => cluster.disconnect(),
  };
}

/** iovalkey, an optional peer: imported only for a pipeline whose lease records are in Valkey. */
async function loadCluster(name: string): Promise<ClusterClass> {
  try {
    return (await import('iovalkey')).Cluster;
  } catch (error) {
    throw new ValkeyClientMissingError(
      `The pipeline keeps its lease records in Valkey (${name}); reading them needs the package iovalkey, ` +
        `which cannot be imported (${(error as Error).message}). Install it (\`npm install iovalkey\`) and run ` +
        'the command again.',
      { cause: error },
    );
  }
}

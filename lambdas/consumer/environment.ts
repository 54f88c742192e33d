import { EnvironmentReader } from '../common/environment.js';

/**
 * The environment variables `fifoBatch` falls back on for the options it is not given. The
 * OncelyPipeline construct (`oncely/cdk`) sets them on the consumer it deploys, and the sandbox
 * (`oncely local`) sets them too; Powertools reads its own (`POWERTOOLS_SERVICE_NAME`, …).
 */
export const CONSUMER_ENVIRONMENT = {
  /** The idempotency table, for the default `store`. */
  idempotencyTableName: 'IDEMPOTENCY_TABLE_NAME',
  /** Optional: the lifetime of an idempotency record in seconds; the store's default (30 days) when unset. */
  idempotencyTtlSeconds: 'IDEMPOTENCY_TTL_SECONDS',
  /** The DLQ's URL (FIFO for `fifoBatch`, standard for `standardBatch`), for the default `deadLetterQueue`. */
  dlqUrl: 'DLQ_URL',
  /** Optional: the queue the consumer reads; a record sent to the DLQ is then deleted from it at once. */
  queueUrl: 'QUEUE_URL',
  /** Optional: how many message groups of a batch run at once; 10 when unset. */
  maxConcurrentGroups: 'MAX_CONCURRENT_GROUPS',
  /** Optional: a record's failed runs before the consumer sends it to the DLQ; 5 when unset. */
  maxAttempts: 'MAX_ATTEMPTS',
  /** Optional: how many records of a standard queue's batch run at once (`standardBatch`); 100 when unset. */
  maxConcurrentRecords: 'MAX_CONCURRENT_RECORDS',
  /**
   * Optional: `host:port` of the ElastiCache Serverless cache for Valkey that keeps the lease-mode
   * records (TLS, IAM authentication); when set, the default `store` is a `ValkeyIdempotencyStore` on
   * it, and transactional operations keep theirs in `IDEMPOTENCY_TABLE_NAME`.
   */
  valkeyEndpoint: 'IDEMPOTENCY_VALKEY_ENDPOINT',
  /** With `IDEMPOTENCY_VALKEY_ENDPOINT`: the ElastiCache user the consumer connects as (IAM authentication). */
  valkeyUserId: 'IDEMPOTENCY_VALKEY_USER_ID',
  /** With `IDEMPOTENCY_VALKEY_ENDPOINT`: the serverless cache's name, which the IAM token is signed for. */
  valkeyCacheName: 'IDEMPOTENCY_VALKEY_CACHE_NAME',
} as const;

/**
 * The key prefix of the default Valkey store on the cache `IDEMPOTENCY_VALKEY_ENDPOINT` names: a
 * serverless cache is a cluster, and the keys one script writes (a record, its log, the unresolved
 * index) must share a slot, which the `{oncely}` hash tag gives them.
 */
export const SERVERLESS_KEY_PREFIX = '{oncely}:';

/** `maxAttempts` when neither the option nor `MAX_ATTEMPTS` sets it; the construct derives its `maxReceiveCount` from it. */
export const DEFAULT_MAX_ATTEMPTS = 5;

/**
 * `maxConcurrentRecords` when neither the option nor `MAX_CONCURRENT_RECORDS` sets it (DESIGN §5.1):
 * twice the SDK v3 HTTP agent's 50 sockets, so that every socket stays busy while records wait on
 * latency or CPU between their requests, and a request queues behind at most one other per socket.
 */
export const DEFAULT_MAX_CONCURRENT_RECORDS = 100;

/** A variable of `CONSUMER_ENVIRONMENT`, by its key: what `readConsumerEnvironment` may be asked to read. */
export type ConsumerVariable = keyof typeof CONSUMER_ENVIRONMENT;

/** The consumer's environment, read and checked. */
export interface ConsumerEnvironment {
  /** `IDEMPOTENCY_TABLE_NAME`: the idempotency table's name. */
  idempotencyTableName: string;
  /** `IDEMPOTENCY_TTL_SECONDS`: how long an idempotency record lives; absent when unset. */
  idempotencyTtlSeconds?: number;
  /** `DLQ_URL`: the FIFO DLQ's URL. */
  dlqUrl: string;
  /** `QUEUE_URL`: the queue the consumer reads; absent when unset. */
  queueUrl?: string;
  /** `MAX_CONCURRENT_GROUPS`: how many message groups of a batch run at once; absent when unset. */
  maxConcurrentGroups?: number;
  /** `MAX_ATTEMPTS`: a record's failed runs before the consumer sends it to the DLQ; absent when unset. */
  maxAttempts?: number;
  /** `MAX_CONCURRENT_RECORDS`: how many records of a standard queue's batch run at once; absent when unset. */
  maxConcurrentRecords?: number;
  /** `IDEMPOTENCY_VALKEY_ENDPOINT`: the lease records cache's host and port; absent when unset. */
  valkeyEndpoint?: ValkeyEndpoint;
  /** `IDEMPOTENCY_VALKEY_USER_ID`: required with `IDEMPOTENCY_VALKEY_ENDPOINT`, ignored without. */
  valkeyUserId?: string;
  /** `IDEMPOTENCY_VALKEY_CACHE_NAME`: required with `IDEMPOTENCY_VALKEY_ENDPOINT`, ignored without. */
  valkeyCacheName?: string;
}

/** A Valkey server's address, read from `host:port`. */
export interface ValkeyEndpoint {
  host: string;
  port: number;
}

const ALL_VARIABLES = Object.keys(CONSUMER_ENVIRONMENT) as ConsumerVariable[];

/**
 * Reads and checks `variables` (all by default; `fifoBatch` reads only those its options leave to
 * the environment). The OncelyConfigurationError names every variable that is missing or invalid,
 * at once: it fails the whole batch, since no record can be processed without its table or its DLQ.
 */
export function readConsumerEnvironment<V extends ConsumerVariable = ConsumerVariable>(
  variables: readonly V[] = ALL_VARIABLES as V[],
  environment: Readonly<Record<string, string | undefined>> = process.env,
): Pick<ConsumerEnvironment, V> {
  const read = new EnvironmentReader(environment);
  const {
    idempotencyTableName,
    idempotencyTtlSeconds,
    dlqUrl,
    queueUrl,
    maxConcurrentGroups,
    maxAttempts,
    maxConcurrentRecords,
    valkeyEndpoint,
    valkeyUserId,
    valkeyCacheName,
  } = CONSUMER_ENVIRONMENT;
  // Methods, not arrow functions: a minifying bundler that keeps names (the construct's) wraps each
  // arrow function in a call that names it, and leaves a method as it is.
  const readers: Record<ConsumerVariable, () => unknown> = {
    idempotencyTableName() {
      return read.required(idempotencyTableName);
    },
    idempotencyTtlSeconds() {
      return read.integer(idempotencyTtlSeconds, { min: 1 });
    },
    dlqUrl() {
      return read.url(dlqUrl);
    },
    queueUrl() {
      return read.url(queueUrl, 'optional');
    },
    maxConcurrentGroups() {
      return read.integer(maxConcurrentGroups, { min: 1 });
    },
    maxAttempts() {
      return read.integer(maxAttempts, { min: 1 });
    },
    maxConcurrentRecords() {
      return read.integer(maxConcurrentRecords, { min: 1 });
    },
    valkeyEndpoint() {
      return read.endpoint(valkeyEndpoint);
    },
    // The user and the cache are read (and required) only with an endpoint.
    valkeyUserId() {
      return environment[valkeyEndpoint] ? read.required(valkeyUserId) : undefined;
    },
    valkeyCacheName() {
      return environment[valkeyEndpoint] ? read.required(valkeyCacheName) : undefined;
    },
  };
  const values = Object.fromEntries(variables.map((variable) => [variable, readers[variable]()]));
  read.check(
    "The consumer's environment is incomplete or invalid",
    'The OncelyPipeline construct (oncely/cdk) sets these variables on the consumer it deploys, and ' +
      '`oncely local` in its sandbox; elsewhere, set them, or give fifoBatch the options they stand for ' +
      '(store, deadLetterQueue, maxConcurrentGroups, maxAttempts; standardBatch: maxConcurrentRecords).',
  );
  return values as Pick<ConsumerEnvironment, V>;
}

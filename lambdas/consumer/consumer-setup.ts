import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { OncelyConfigurationError } from '../common/configuration-error.js';
import { refuseUnknownKeys } from '../common/known-keys.js';
import { metricsScope } from '../common/metrics-scope.js';
import { providedModule } from '../common/provided-module.js';
import { loadTracing, type Tracing } from '../common/tracing.js';
import { IdempotencyConfigurationError, TransactionalStoreError } from '../idempotency/errors.js';
import type { LeaseStore } from '../idempotency/lease-store.js';
import { DynamoDBIdempotencyStore } from '../idempotency/store.js';
import { storeName } from '../idempotency/transactional.js';
import {
  DEAD_LETTER_QUEUE_OPTION_KEYS,
  DeadLetterQueue,
  type DeadLetterQueueOptions,
  defaultSqsClient,
} from './dead-letter-queue.js';
import {
  CONSUMER_ENVIRONMENT,
  type ConsumerEnvironment,
  type ConsumerVariable,
  DEFAULT_MAX_ATTEMPTS,
  readConsumerEnvironment,
} from './environment.js';
import { CONSUMER_HOOK_KEYS } from './hooks.js';
import type { MessageParser } from './message.js';
import type { ConsumerOperation } from './operations.js';
import type { RecordProcessorOptions } from './record-processor.js';
import type { ConsumerLogger, MetricsSink } from './telemetry.js';

/**
 * The options `fifoBatch` and `standardBatch` share (each documents them on its own options type):
 * what a consumer needs whatever its queue.
 */
export interface SharedConsumerOptions {
  operations: Readonly<Record<string, ConsumerOperation>>;
  store?: LeaseStore;
  transactionalStore?: DynamoDBIdempotencyStore;
  deadLetterQueue?: DeadLetterQueueOptions;
  logger?: ConsumerLogger;
  metrics?: MetricsSink;
  telemetry?: 'powertools' | 'off';
  maxAttempts?: number;
  dedupHorizonMarginSeconds?: number;
  parse?: MessageParser;
}

/**
 * The keys of the options both consumers take (`FifoBatchOptions`' but its groups). Each consumer's
 * own list spreads them, and the compiler checks that list against its options type.
 */
export const CONSUMER_OPTION_KEYS = {
  operations: true,
  store: true,
  transactionalStore: true,
  deadLetterQueue: true,
  logger: true,
  metrics: true,
  telemetry: true,
  maxAttempts: true,
  recordTimeReserveMs: true,
  dedupHorizonMarginSeconds: true,
  parse: true,
  hooks: true,
} as const;

/** Refuses an unknown key in a consumer's options, in its `deadLetterQueue` and in its `hooks`. */
export function refuseUnknownConsumerKeys(
  consumer: 'fifoBatch' | 'standardBatch',
  options: { deadLetterQueue?: object; hooks?: object },
  known: Readonly<Record<string, true>>,
): void {
  refuseUnknownKeys(`${consumer}()`, options, known);
  refuseUnknownKeys(
    `${consumer}({ deadLetterQueue })`,
    options.deadLetterQueue,
    DEAD_LETTER_QUEUE_OPTION_KEYS,
  );
  refuseUnknownKeys(`${consumer}({ hooks })`, options.hooks, CONSUMER_HOOK_KEYS);
}

/**
 * Refuses, where the consumer is made, transactional operations without a DynamoDB store: their
 * record commits in one DynamoDB transaction with their own writes (`TransactionalStoreError`). A
 * consumer given another `store` (Valkey's) runs them on its `transactionalStore`; one given neither
 * runs them on the DynamoDB store of its environment (`IDEMPOTENCY_TABLE_NAME`), whatever keeps its
 * lease records.
 */
function refuseTransactionalStore({ store, transactionalStore, operations }: SharedConsumerOptions): void {
  const given = transactionalStore ?? store;
  if (!given || given instanceof DynamoDBIdempotencyStore) return;
  const transactional = Object.entries(operations ?? {})
    .filter(([, operation]) => operation.transactional)
    .map(([type, operation]) => `${type} (namespace ${operation.namespace})`);
  if (transactional.length > 0 || transactionalStore) {
    throw new TransactionalStoreError(
      transactional.length > 0 ? transactional : ['transactionalStore'],
      storeName(given),
    );
  }
}

const TELEMETRY_CHOICES = ['powertools', 'off'] as const;

/** The default store's client: one per container, whatever the number of consumers (the DLQ's: `defaultSqsClient`). */
let dynamodbClient: DynamoDBClient | undefined;

function defaultDynamoDBClient(): DynamoDBClient {
  dynamodbClient ??= new DynamoDBClient({});
  return dynamodbClient;
}

/** What the default stores read: the table, the records' lifetime, and the Valkey cache when there is one. */
const STORE_VARIABLES = [
  'idempotencyTableName',
  'idempotencyTtlSeconds',
  'valkeyEndpoint',
  'valkeyUserId',
  'valkeyCacheName',
] as const satisfies readonly ConsumerVariable[];

/**
 * Makes the default Valkey store from the environment's cache and the default DynamoDB client (its
 * credentials sign the IAM token). `valkey-default-store.ts` provides it, and the OncelyPipeline
 * construct bundles that module into a consumer only with `leaseRecords: 'valkey'`: a consumer
 * whose records stay in DynamoDB carries neither the Valkey store's scripts nor iovalkey.
 */
export type ValkeyDefaultStore = (environment: ConsumerEnvironment, dynamodb: DynamoDBClient) => LeaseStore;

const valkeyDefaultStore = /* @__PURE__ */ providedModule<ValkeyDefaultStore>(
  'oncely.consumer.valkeyDefaultStore',
);

/**
 * Provides (or, with `undefined`, withdraws) the factory of the default Valkey store; returns the
 * previous one.
 * @internal
 */
export function provideValkeyDefaultStore(
  factory: ValkeyDefaultStore | undefined,
): ValkeyDefaultStore | undefined {
  return valkeyDefaultStore.provide(factory);
}

/** The default store on the cache `IDEMPOTENCY_VALKEY_ENDPOINT` names, or none without one. */
function defaultValkeyStore(environment: ConsumerEnvironment): LeaseStore | undefined {
  if (!environment.valkeyEndpoint) return undefined;
  const factory = valkeyDefaultStore.get();
  if (!factory) {
    throw new OncelyConfigurationError(
      [CONSUMER_ENVIRONMENT.valkeyEndpoint],
      `${CONSUMER_ENVIRONMENT.valkeyEndpoint} is set, but this consumer was bundled without the Valkey store: ` +
        "the OncelyPipeline construct adds it with leaseRecords: 'valkey'. Elsewhere, pass the consumer a " +
        'store (a ValkeyIdempotencyStore of your client) and, for transactional operations, a transactionalStore.',
    );
  }
  return factory(environment, defaultDynamoDBClient());
}

/** The line a consumer logs on its first batch, with the message types it handles (`messageTypes`). */
export const CONSUMER_READY_MESSAGE = 'the consumer handles these message types';

/** What the consumer uses when `telemetry: 'off'` leaves it no logger or metrics. */
const SILENT_LOGGER: ConsumerLogger = { debug() {}, info() {}, warn() {}, error() {} };
const UNCOUNTED: MetricsSink = { addMetric() {} };

/** Powertools' classes, each imported only for the logger or metrics the options leave to it. */
interface PowertoolsTelemetry {
  Logger?: typeof Logger;
  Metrics?: typeof Metrics;
}

/**
 * Starts importing what the options need of Powertools, as soon as the consumer is made: `import()`
 * rather than a static import, so that a consumer that needs none never loads it (nor, bundled,
 * runs its modules' code), and one that does loads it in the function's init when `fifoBatch()`
 * runs there. A failed import fails the first batch, not the init.
 */
function importPowertools({
  telemetry,
  logger,
  metrics,
}: SharedConsumerOptions): Promise<PowertoolsTelemetry> {
  const wanted = telemetry !== 'off';
  const imported = Promise.all([
    wanted && !logger ? import('@aws-lambda-powertools/logger').then((module) => module.Logger) : undefined,
    wanted && !metrics
      ? import('@aws-lambda-powertools/metrics').then((module) => module.Metrics)
      : undefined,
  ]).then(([Logger, Metrics]) => ({ Logger, Metrics }));
  imported.catch(() => {}); // awaited by the first batch: not an unhandled rejection meanwhile
  return imported;
}

export interface Telemetry {
  logger: ConsumerLogger;
  metrics: MetricsSink;
  /** Set when the consumer created the metrics: then it publishes them itself. */
  ownMetrics?: Metrics;
  /** Set when the consumer created the logger: then it gives it each invocation's context. */
  ownLogger?: Logger;
  /** Each record's span (DESIGN §6); none without `@opentelemetry/api`. */
  tracing?: Tracing;
}

/** What a consumer reads once, on its first batch: the record processor's settings and the variables it asked for. */
export interface ConsumerSettings<V extends ConsumerVariable> {
  processor: RecordProcessorOptions;
  environment: Pick<ConsumerEnvironment, V>;
}

/**
 * What every consumer keeps for the container's life, whatever its queue: its checked options, its
 * telemetry (Powertools imported only for what the options leave to it), and its defaults, made on
 * the first batch from the environment the options leave to it.
 */
export class ConsumerSetup<V extends ConsumerVariable> {
  readonly #options: SharedConsumerOptions;
  /** The variables of the consumer's own options, read with the shared ones when unset. */
  readonly #ownVariables: readonly V[];
  readonly #powertools: Promise<PowertoolsTelemetry>;
  /** Loaded with Powertools, in the module's init: `@opentelemetry/api` when installed. */
  readonly #tracing = loadTracing();
  #telemetry: Promise<Telemetry> | undefined;
  #settings: ConsumerSettings<V> | undefined;

  /**
   * @param positiveIntegers the options, the shared ones' and the consumer's own, that must be
   *   positive integers when given
   */
  constructor(
    options: SharedConsumerOptions,
    ownVariables: readonly V[],
    positiveIntegers: Readonly<Record<string, number | undefined>>,
  ) {
    for (const [name, value] of Object.entries({ ...positiveIntegers, maxAttempts: options.maxAttempts })) {
      if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
        throw new IdempotencyConfigurationError(`${name} must be a positive integer, not ${value}.`);
      }
    }
    if (options.telemetry !== undefined && !TELEMETRY_CHOICES.includes(options.telemetry)) {
      throw new IdempotencyConfigurationError(
        `telemetry must be ${TELEMETRY_CHOICES.map((choice) => `'${choice}'`).join(' or ')}, not ${JSON.stringify(options.telemetry)}.`,
      );
    }
    refuseTransactionalStore(options);
    this.#options = options;
    this.#ownVariables = ownVariables;
    this.#powertools = importPowertools(options);
  }

  /**
   * Runs one batch with the telemetry: the logger it created gets the invocation's context, an error
   * that fails the whole batch is logged with its message ids, and the metrics it created are
   * published at the end.
   */
  async processBatch(
    event: SQSEvent,
    lambdaContext: Context,
    batch: (telemetry: Telemetry) => Promise<SQSBatchResponse>,
  ): Promise<SQSBatchResponse> {
    const first = this.#telemetry === undefined;
    const telemetry = await this.#telemetryOnce();
    // The logger it created gets each invocation's context (request id, cold start), as Powertools'
    // injectLambdaContext would give it; a logger passed in is its owner's to set up.
    telemetry.ownLogger?.addContext(lambdaContext);
    // Once a container: the types it handles, which an operator asks first, and which a sandbox's
    // console offers to publish (docs/console.md).
    if (first) {
      telemetry.logger.info(CONSUMER_READY_MESSAGE, { messageTypes: Object.keys(this.#options.operations) });
    }
    try {
      return await batch(telemetry);
    } catch (error) {
      telemetry.logger.error('the whole batch failed: SQS redelivers every record of it', {
        error,
        messageIds: event.Records.map((record) => record.messageId),
      });
      throw error;
    } finally {
      // Only the metrics it created: metrics passed in are published by their owner.
      if (telemetry.ownMetrics?.hasStoredMetrics()) telemetry.ownMetrics.publishStoredMetrics();
    }
  }

  /** Made on the first batch, once Powertools' classes the options need, and `@opentelemetry/api` if installed, are imported. */
  #telemetryOnce(): Promise<Telemetry> {
    this.#telemetry ??= Promise.all([this.#powertools, this.#tracing]).then(
      ([{ Logger, Metrics }, tracing]) => {
        const ownLogger = this.#options.logger || !Logger ? undefined : new Logger();
        const ownMetrics =
          this.#options.metrics || !Metrics ? undefined : new Metrics({ defaultDimensions: metricsScope() });
        return {
          logger: this.#options.logger ?? ownLogger ?? SILENT_LOGGER,
          metrics: this.#options.metrics ?? ownMetrics ?? UNCOUNTED,
          ownLogger,
          ownMetrics,
          tracing,
        };
      },
    );
    return this.#telemetry;
  }

  /**
   * Reads only the variables the options leave to the environment (the consumer's own ones it was
   * given: it asks for those of its options that are unset); a failed read is tried again next batch.
   */
  settings(): ConsumerSettings<V> {
    if (this.#settings) return this.#settings;
    const { operations, store, transactionalStore, deadLetterQueue, maxAttempts } = this.#options;
    const variables: ConsumerVariable[] = [
      ...(store ? [] : STORE_VARIABLES),
      ...(deadLetterQueue ? [] : (['dlqUrl', 'queueUrl'] as const)),
      ...this.#ownVariables,
      ...(maxAttempts === undefined ? (['maxAttempts'] as const) : []),
    ];
    const environment = readConsumerEnvironment(variables) as ConsumerEnvironment;
    // The DynamoDB store on the environment's table: the default store, and transactional operations' default.
    const tableStore = store
      ? undefined
      : new DynamoDBIdempotencyStore({
          client: defaultDynamoDBClient(),
          tableName: environment.idempotencyTableName,
          ttlSeconds: environment.idempotencyTtlSeconds,
        });
    const resolvedStore =
      store ?? defaultValkeyStore(environment) ?? (tableStore as DynamoDBIdempotencyStore);
    this.#settings = {
      environment,
      processor: {
        store: resolvedStore,
        transactionalStore:
          transactionalStore ?? (store instanceof DynamoDBIdempotencyStore ? store : tableStore),
        operations,
        deadLetterQueue: new DeadLetterQueue(
          deadLetterQueue ?? {
            client: defaultSqsClient,
            queueUrl: environment.dlqUrl,
            sourceQueueUrl: environment.queueUrl,
          },
          resolvedStore,
        ),
        horizon: {
          ttlSeconds: resolvedStore.ttlSeconds,
          marginSeconds: this.#options.dedupHorizonMarginSeconds,
        },
        maxAttempts: maxAttempts ?? environment.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      },
    };
    return this.#settings;
  }
}

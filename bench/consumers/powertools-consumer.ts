import {
  BatchProcessor,
  EventType,
  processPartialResponse,
  SqsFifoPartialProcessorAsync,
} from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import {
  requiredVariable,
  type ShopEvent,
  type ShopSettings,
  shopEventEffect,
  shopSettingsFromEnvironment,
} from './shop-events.js';

export interface PowertoolsConsumerOptions extends ShopSettings {
  dynamodb: DynamoDBClient;
  idempotencyTableName: string;
  logger?: Logger;
  metrics?: Metrics;
  /**
   * `standard`: the documented standard-queue pattern instead, `BatchProcessor(EventType.SQS)`,
   * whose records run all at once (`processInParallel`, true by default). FIFO when unset.
   */
  queueType?: 'fifo' | 'standard';
  /** What each record does, instead of the shop's effect (the in-flight duplicates hold it). */
  effect?: (event: ShopEvent) => Promise<void>;
}

/**
 * The example consumer's business logic as a Powertools user would build it, following Powertools'
 * documentation for batches with idempotency: on FIFO, `SqsFifoPartialProcessorAsync` runs the
 * records one after another; on a standard queue `BatchProcessor` runs them all at once; each
 * through `makeIdempotent` with the DynamoDB persistence layer, keyed by the envelope's key and
 * checked against its type and payload (as Oncely checks for conflicts). Logger and Metrics as the
 * example consumer has them.
 */
export function createPowertoolsConsumerHandler(options: PowertoolsConsumerOptions) {
  const { dynamodb, logger = new Logger(), metrics = new Metrics() } = options;
  const effect = options.effect ?? shopEventEffect(DynamoDBDocumentClient.from(dynamodb), options);
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'powertools_json(body).key',
    payloadValidationJmesPath: 'powertools_json(body).[type, payload]',
  });
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: options.idempotencyTableName,
    awsSdkV3Client: dynamodb,
  });
  const processRecord = makeIdempotent(
    async (record: SQSRecord) => {
      const event = JSON.parse(record.body) as ShopEvent;
      await effect(event);
      metrics.addMetric('RecordsProcessed', MetricUnit.Count, 1);
      logger.info('processed', { messageId: record.messageId, messageKey: event.key });
    },
    { persistenceStore, config },
  );
  const processBatch = options.queueType === 'standard' ? standardProcessor() : fifoProcessor();

  return async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
    logger.addContext(context);
    config.registerLambdaContext(context);
    try {
      return await processBatch(event, processRecord, context);
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}

type RecordHandler = (record: SQSRecord) => Promise<void>;

/** Powertools' FIFO processor, made once as its docs make it. */
function fifoProcessor() {
  const processor = new SqsFifoPartialProcessorAsync();
  return (event: SQSEvent, processRecord: RecordHandler, context: Context) =>
    // skipGroupOnError: a failure skips the rest of its group only, as Oncely does.
    processPartialResponse(event, processRecord, processor, { context, skipGroupOnError: true });
}

/** Powertools' standard-queue processor, made once, with its default: every record at once. */
function standardProcessor() {
  const processor = new BatchProcessor(EventType.SQS);
  return (event: SQSEvent, processRecord: RecordHandler, context: Context) =>
    processPartialResponse(event, processRecord, processor, { context });
}

let configured: ReturnType<typeof createPowertoolsConsumerHandler> | undefined;

/** The Lambda entry point, reading the example consumer's variables; built on the first invocation. */
export async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  configured ??= createPowertoolsConsumerHandler({
    dynamodb: new DynamoDBClient({}),
    idempotencyTableName: requiredVariable('IDEMPOTENCY_TABLE_NAME'),
    ...shopSettingsFromEnvironment(),
  });
  return configured(event, context);
}

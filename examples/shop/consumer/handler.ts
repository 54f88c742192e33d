import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createConsumerHandler } from './consumer.js';
import { readConsumerConfig } from './environment.js';

let consumer: ReturnType<typeof createConsumerHandler> | undefined;

/**
 * The Lambda entry point. Built on the first invocation rather than at import, so that tests and
 * tools can import it without the environment; clients and caches then live with the container.
 */
export async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  consumer ??= createConsumerHandler({
    config: readConsumerConfig(),
    dynamodb: new DynamoDBClient({}),
    sqs: new SQSClient({}),
  });
  return consumer(event, context);
}

import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createStandardShopHandler } from './consumer.js';
import { readShopConfig } from './environment.js';

let shop: ReturnType<typeof createStandardShopHandler> | undefined;

/** The Lambda entry point of the shop's consumer on a standard queue, as handler.ts is on FIFO. */
export async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  shop ??= createStandardShopHandler(readShopConfig());
  return shop(event, context);
}

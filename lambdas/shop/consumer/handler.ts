import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createShopHandler } from './consumer.js';
import { readShopConfig } from './environment.js';

let shop: ReturnType<typeof createShopHandler> | undefined;

/**
 * The Lambda entry point, built on the first invocation rather than at import, so that tests and
 * tools can import it without the environment; its clients and caches then live with the container.
 */
export async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  shop ??= createShopHandler(readShopConfig());
  return shop(event, context);
}

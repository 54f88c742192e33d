import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { readMonitorEnvironment } from './environment.js';
import { createMonitorHandler } from './monitor.js';
import type { UnresolvedCounts } from './unresolved-counts.js';
import { valkeyCounter } from './valkey-counter.js';

let monitor: ReturnType<typeof createMonitorHandler> | undefined;

/**
 * The Lambda entry point, run by an EventBridge schedule (its event carries nothing it needs).
 * Built on the first invocation rather than at import, so that tools can import it without the
 * environment; the clients then live with the container.
 */
export async function handler(): Promise<UnresolvedCounts> {
  if (!monitor) {
    const environment = readMonitorEnvironment();
    const dynamodb = new DynamoDBClient({});
    monitor = createMonitorHandler({
      dynamodb,
      idempotencyTableName: environment.idempotencyTableName,
      valkey: valkeyCounter(environment, dynamodb),
    });
  }
  return monitor();
}

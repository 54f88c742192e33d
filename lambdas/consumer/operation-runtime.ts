import type { Context } from 'aws-lambda';
import type { LeaseStore } from '../idempotency/lease-store.js';
import type { DynamoDBIdempotencyStore } from '../idempotency/store.js';
import type { RecordTelemetry } from './telemetry.js';

/** What the batch middleware gives an operation for one record. */
export interface OperationRuntime {
  store: LeaseStore;
  /** Where transactional operations keep their records, when `store` is not DynamoDB's. */
  transactionalStore?: DynamoDBIdempotencyStore;
  telemetry: RecordTelemetry;
  lambdaContext: Context;
  /** Aborted when the batch fails as a whole: a lease acquired after that is released unused. */
  signal: AbortSignal;
  /** A lease-mode record failing its `maxAttempts`-th run since its last dead-lettering goes to the DLQ (DESIGN §5). */
  maxAttempts: number;
}

/** How an operation ended for a record that did not fail. */
export type OperationOutcome = 'executed' | 'duplicate' | 'in-doubt';

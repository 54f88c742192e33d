import { type IdempotencyMode, NonRetryableError } from '../../../src/idempotency/index.js';
/**
 * The consumer's environment variables: the CDK stack and the local sandbox set exactly these.
 * Powertools reads its own (`POWERTOOLS_SERVICE_NAME`, `POWERTOOLS_METRICS_NAMESPACE`, …).
 */
export declare const CONSUMER_ENVIRONMENT: {
    readonly idempotencyTableName: 'IDEMPOTENCY_TABLE_NAME';
    readonly ledgerTableName: 'LEDGER_TABLE_NAME';
    readonly dlqUrl: 'DLQ_URL';
    readonly notificationUrl: 'NOTIFICATION_URL';
    /** Optional: the queue the consumer reads; a record dead-lettered is then deleted from it at once. */
    readonly queueUrl: 'QUEUE_URL';
    /** Optional: lifetime of an idempotency record; must outlive queue + DLQ retention. */
    readonly idempotencyTtlSeconds: 'IDEMPOTENCY_TTL_SECONDS';
    /** Optional: how many message groups of a batch run at once. */
    readonly maxConcurrentGroups: 'MAX_CONCURRENT_GROUPS';
    /** Optional: how long a notification POST may take before its outcome counts as unknown. */
    readonly notificationTimeoutMs: 'NOTIFICATION_TIMEOUT_MS';
    /** Optional: `at-most-once` (default: a crashed send is parked IN_DOUBT) or `at-least-once` (it is re-sent). */
    readonly notificationMode: 'NOTIFICATION_MODE';
};
export declare const DEFAULT_NOTIFICATION_TIMEOUT_MS = 5000;
export interface ConsumerConfig {
    idempotencyTableName: string;
    ledgerTableName: string;
    dlqUrl: string;
    notificationUrl: string;
    /** The source queue; without it a dead-lettered record is left for the event source mapping to delete. */
    queueUrl?: string;
    /** The store's default (30 days) when unset. */
    idempotencyTtlSeconds?: number;
    /** The middleware's default (10) when unset. */
    maxConcurrentGroups?: number;
    notificationTimeoutMs: number;
    notificationMode: IdempotencyMode;
}
/** The consumer cannot start: its environment is incomplete or wrong. */
export declare class ConsumerEnvironmentError extends NonRetryableError {
    static readonly errorName: string;
}
/** Reads and checks the consumer's environment; the error names every missing or invalid variable. */
export declare function readConsumerConfig(environment?: NodeJS.ProcessEnv): ConsumerConfig;

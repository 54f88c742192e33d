import { type Environment, EnvironmentReader } from '../common/environment.js';
import { CONSUMER_ENVIRONMENT, type ValkeyEndpoint } from '../consumer/environment.js';

/**
 * The unresolved-records monitor's environment variables: the CDK stack and the local sandbox set
 * exactly these, by these names.
 */
export const MONITOR_ENVIRONMENT = {
  /** The idempotency table (DESIGN §3), whose sparse `unresolved` index the monitor counts. */
  idempotencyTableName: 'IDEMPOTENCY_TABLE_NAME',
  /**
   * Optional: the cache keeping the lease-mode records (`leaseRecords: 'valkey'`), whose unresolved
   * ones the monitor counts too; the consumer's variables, by the same names.
   */
  valkeyEndpoint: CONSUMER_ENVIRONMENT.valkeyEndpoint,
  /** Required with `IDEMPOTENCY_VALKEY_ENDPOINT`: the cache's IAM user. */
  valkeyUserId: CONSUMER_ENVIRONMENT.valkeyUserId,
  /** Required with `IDEMPOTENCY_VALKEY_ENDPOINT`: the cache's name, which its IAM token is signed for. */
  valkeyCacheName: CONSUMER_ENVIRONMENT.valkeyCacheName,
} as const;

export interface MonitorEnvironment {
  idempotencyTableName: string;
  /** Absent when `IDEMPOTENCY_VALKEY_ENDPOINT` is unset; then the user and the cache are too. */
  valkeyEndpoint?: ValkeyEndpoint;
  valkeyUserId?: string;
  valkeyCacheName?: string;
}

/** Reads and checks the monitor's variables; the OncelyConfigurationError names every one to fix. */
export function readMonitorEnvironment(environment: Environment = process.env): MonitorEnvironment {
  const read = new EnvironmentReader(environment);
  const withValkey = Boolean(environment[MONITOR_ENVIRONMENT.valkeyEndpoint]);
  const values = {
    idempotencyTableName: read.required(MONITOR_ENVIRONMENT.idempotencyTableName),
    valkeyEndpoint: read.endpoint(MONITOR_ENVIRONMENT.valkeyEndpoint),
    valkeyUserId: withValkey ? read.required(MONITOR_ENVIRONMENT.valkeyUserId) : undefined,
    valkeyCacheName: withValkey ? read.required(MONITOR_ENVIRONMENT.valkeyCacheName) : undefined,
  };
  read.check(
    'The unresolved-records monitor cannot start',
    'The OncelyPipeline construct and the local sandbox set it; set it yourself when running the handler anywhere else.',
  );
  return values;
}

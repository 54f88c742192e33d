import { type Environment, EnvironmentReader } from '../common/environment.js';

/**
 * The unresolved-records monitor's environment variables: the CDK stack and the local sandbox set
 * exactly these, by these names.
 */
export const MONITOR_ENVIRONMENT = {
  /** The idempotency table (DESIGN §3), whose sparse `unresolved` index the monitor counts. */
  idempotencyTableName: 'IDEMPOTENCY_TABLE_NAME',
} as const;

export interface MonitorEnvironment {
  idempotencyTableName: string;
}

/** Reads and checks the monitor's variables; the OncelyConfigurationError names every one to fix. */
export function readMonitorEnvironment(environment: Environment = process.env): MonitorEnvironment {
  const read = new EnvironmentReader(environment);
  const values = { idempotencyTableName: read.required(MONITOR_ENVIRONMENT.idempotencyTableName) };
  read.check(
    'The unresolved-records monitor cannot start',
    'The OncelyPipeline construct and the local sandbox set it; set it yourself when running the handler anywhere else.',
  );
  return values;
}

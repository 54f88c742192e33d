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

/** The environment lacks a variable; the message names every one. */
export class MonitorEnvironmentError extends Error {
  override readonly name = 'MonitorEnvironmentError';
}

export function readMonitorEnvironment(env: NodeJS.ProcessEnv = process.env): MonitorEnvironment {
  const tableName = env[MONITOR_ENVIRONMENT.idempotencyTableName];
  if (!tableName) {
    throw new MonitorEnvironmentError(
      `The unresolved-records monitor cannot start: ${MONITOR_ENVIRONMENT.idempotencyTableName} is not set. ` +
        'The CDK stack and the local sandbox set it; set it yourself when running the handler anywhere else.',
    );
  }
  return { idempotencyTableName: tableName };
}

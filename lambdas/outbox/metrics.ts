/**
 * The outbox's CloudWatch metrics (EMF, dimension `service`). The OncelyOutbox construct's alarm
 * watches `stuck`.
 */
export const OUTBOX_METRICS = {
  /** Relay: messages it sent and marked SENT in one invocation. */
  relayed: 'OutboxRelayedMessages',
  /** Relay: messages it left pending after a failed send (or an unwritten SENT mark). */
  unsent: 'OutboxUnsentMessages',
  /** Sweeper: messages it sent and marked SENT in one run. */
  swept: 'OutboxSweptMessages',
  /** Sweeper: messages pending longer than the stuck bound, after its run. */
  stuck: 'OutboxStuckMessages',
  /** Sweeper: the age of the oldest pending message after its run, in seconds. */
  oldestPendingAge: 'OutboxOldestPendingAgeSeconds',
} as const;

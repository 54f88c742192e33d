import type { StoredError } from './errors.js';

/**
 * What the idempotency core reports but does not throw: the effect already happened (or the
 * message is acknowledged), so these are for logs, metrics and alarms, not for the caller.
 */
export interface IdempotencyObserver {
  /**
   * The effect succeeded but its COMPLETED write kept failing: the message is not acknowledged,
   * and its redelivery settles the record once the lease expired.
   */
  completionWriteFailed(id: string, error: unknown): void;
  /** The effect succeeded and is recorded, but its result was too large to store: duplicates cannot replay it. */
  resultNotStored(id: string, bytes: number): void;
  /** A fenced write found another owner: this invocation's lease had expired and was taken over. */
  leaseLost(id: string, operation: string): void;
  /** A record became IN_DOUBT; an operator must resolve it. */
  inDoubt(id: string, reason: StoredError): void;
  /** Recording a failure failed; the message is not acknowledged and the record stays IN_PROGRESS until its lease expires. */
  failureWriteFailed(id: string, error: unknown): void;
}

function log(message: string, fields: Record<string, unknown>): void {
  console.warn(JSON.stringify({ level: 'WARN', message, ...fields }));
}

/**
 * Structured JSON lines on stderr: what a Lambda without other wiring gets. Methods rather than
 * arrow functions, which a minifying bundler that keeps names (the construct's) wraps one by one.
 */
export const consoleObserver: IdempotencyObserver = {
  completionWriteFailed(id, error) {
    log('effect completed but its completion could not be recorded; the lease will expire', {
      id,
      error: String(error),
    });
  },
  resultNotStored(id, bytes) {
    log('effect completed and recorded, but its result was too large to store for duplicates', { id, bytes });
  },
  leaseLost(id, operation) {
    log('lease lost: another invocation took this record over', { id, operation });
  },
  inDoubt(id, reason) {
    log('record is IN_DOUBT and needs an operator', { id, reason });
  },
  failureWriteFailed(id, error) {
    log('could not record a failure; the record stays IN_PROGRESS until its lease expires', {
      id,
      error: String(error),
    });
  },
};

/**
 * The monitor's CloudWatch metrics (EMF, unit Count, dimension `service`): how many records of each
 * unresolved reason exist at the moment of the run. The stack's alarms watch these names.
 */
export const UNRESOLVED_METRICS = {
  /** Live IN_DOUBT records: effects that may or may not have happened, waiting for an operator. */
  inDoubt: 'UnresolvedInDoubtRecords',
  /** Live records an operator chose to retry whose message is not yet back on the queue. */
  retryPending: 'UnresolvedRetryPendingRecords',
} as const;

/**
 * Which kind of SQS queue a URL names, and what a message sent to it carries (DESIGN §5.1).
 *
 * The URL says it: SQS requires a FIFO queue's name to end in `.fifo` and refuses that ending on a
 * standard queue. So a sender needs no setting of its own that could disagree with its queue.
 */
export function isFifoQueueUrl(queueUrl: string): boolean {
  return queueUrl.endsWith('.fifo');
}

/** A SendMessage(Batch) entry's group and deduplication id. */
export interface MessageGrouping {
  MessageGroupId?: string;
  MessageDeduplicationId?: string;
}

/**
 * A message's group and deduplication id for its queue. A FIFO queue needs both. A standard queue
 * refuses a deduplication id, and takes a group as a fair queue's tenant key: sent when the
 * message has one (`''` is none, as a plain standard queue's records have).
 */
export function groupingFor(queueUrl: string, groupId: string, deduplicationId: string): MessageGrouping {
  if (isFifoQueueUrl(queueUrl)) return { MessageGroupId: groupId, MessageDeduplicationId: deduplicationId };
  return groupId ? { MessageGroupId: groupId } : {};
}

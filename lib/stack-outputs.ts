/**
 * The stack outputs other services (and the end-to-end suite, the operations CLI) find the
 * pipeline by. One constant each, so the stack and its readers cannot drift apart.
 */
export const STACK_OUTPUTS = {
  publisherFunctionName: 'PublisherFunctionName',
  publisherFunctionArn: 'PublisherFunctionArn',
  consumerFunctionName: 'ConsumerFunctionName',
  queueUrl: 'QueueUrl',
  queueArn: 'QueueArn',
  dlqUrl: 'DlqUrl',
  dlqArn: 'DlqArn',
  idempotencyTableName: 'IdempotencyTableName',
  ledgerTableName: 'LedgerTableName',
} as const;

export type StackOutputKey = keyof typeof STACK_OUTPUTS;

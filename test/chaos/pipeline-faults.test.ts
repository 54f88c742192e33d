import { describe, expect, it } from 'vitest';
import { pipelineDynamoDbPlan } from '../../chaos/pipeline-faults.js';
import type { ChaosRequest } from '../../harness/faults.js';
import { NOTIFICATIONS_NAMESPACE } from '../../lambdas/shop/consumer/notifications.js';

// The pipeline's two planned crashes (chaos/pipeline-faults.ts): one notification's acquire hangs,
// and another's completion, whichever write the acquire is (DESIGN §3).

const keys = Array.from({ length: 20 }, (_, i) => `n-${i}`);
const id = (key: string) => ({ S: `${NOTIFICATIONS_NAMESPACE}#${key}` });

/** The acquire's PutItem, which creates a notification's record. */
const put = (key: string): Omit<ChaosRequest, 'ordinal'> => ({
  service: 'dynamodb',
  operation: 'PutItem',
  body: { TableName: 't', Item: { id: id(key), status: { S: 'IN_PROGRESS' } } },
});

/** The acquire's UpdateItem, which takes an existing record. */
const takeOver = (key: string): Omit<ChaosRequest, 'ordinal'> => ({
  service: 'dynamodb',
  operation: 'UpdateItem',
  body: {
    TableName: 't',
    Key: { id: id(key) },
    UpdateExpression: 'SET #status = :inProgress, leaseToken = :token',
  },
});

const hangsAmong = (requests: Omit<ChaosRequest, 'ordinal'>[]) => {
  const plan = pipelineDynamoDbPlan(11, keys);
  return requests.filter((request, i) => plan({ ...request, ordinal: i + 1 })?.kind === 'hang').length;
};

describe('the pipeline’s planned hang on an acquire', () => {
  it('hangs one notification’s acquire when the acquire is the PutItem that creates its record', () => {
    expect(hangsAmong(keys.map(put))).toBe(1);
  });

  it('hangs one when the acquire is the UpdateItem that takes a record', () => {
    expect(hangsAmong(keys.map(takeOver))).toBe(1);
  });
});

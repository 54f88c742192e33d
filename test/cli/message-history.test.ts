import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeHistory } from '../../cli/history-report.js';
import { readMessageHistory } from '../../cli/message-history.js';
import { createTable, localDynamoClient } from '../support/dynamodb.js';

// A message's story when its log lines cannot be read (a stack's CloudWatch Logs without the
// permission, or a target that has none): told without them, saying what was not read.

const client = localDynamoClient();
let table: string;

beforeAll(async () => {
  table = await createTable(client, 'history-unread');
});
afterAll(() => client.destroy());

describe('the story without its log lines', () => {
  it('is told from what was read, and says what was not and why', async () => {
    const denied = Object.assign(new Error('not authorized to perform: logs:FilterLogEvents'), {
      name: 'AccessDeniedException',
    });
    const story = await readMessageHistory(
      { name: 'stack Shop', outputs: {}, dynamodb: client, resources: { idempotencyTableName: table } },
      { key: 'o-1', recordIds: ['ledger#o-1'], logs: () => Promise.reject(denied) },
    );
    expect(story.unread).toEqual([
      'the log lines (AccessDeniedException: not authorized to perform: logs:FilterLogEvents)',
    ]);
    expect(story.records).toEqual([expect.objectContaining({ id: 'ledger#o-1' })]);
    expect(describeHistory(story)).toContain(
      '(Not read: the log lines (AccessDeniedException: not authorized to perform: logs:FilterLogEvents).)',
    );
  });
});

import { describe, expect, it } from 'vitest';
import { requestFingerprint } from '../../harness/fingerprint.js';

const dynamodb = (operation: string, body: Record<string, unknown>) =>
  requestFingerprint({ service: 'dynamodb', operation, body });
const sqs = (operation: string, body: Record<string, unknown>) =>
  requestFingerprint({ service: 'sqs', operation, body });

describe('requestFingerprint', () => {
  it('names a DynamoDB request by its operation and key, not by its table, expressions or key order', () => {
    const update = dynamodb('UpdateItem', {
      TableName: 'records-1',
      Key: { id: { S: 'a' }, sk: { N: '1' } },
      UpdateExpression: 'SET #s = :done',
    });
    expect(
      dynamodb('UpdateItem', {
        TableName: 'records-2',
        Key: { sk: { N: '1' }, id: { S: 'a' } },
        UpdateExpression: 'REMOVE x',
      }),
    ).toBe(update);
    expect(dynamodb('UpdateItem', { Key: { id: { S: 'b' }, sk: { N: '1' } } })).not.toBe(update);
    expect(dynamodb('DeleteItem', { Key: { id: { S: 'a' }, sk: { N: '1' } } })).not.toBe(update);
  });

  it("takes a PutItem's id from its item, so attributes that change between tries do not matter", () => {
    expect(dynamodb('PutItem', { Item: { id: { S: 'a' }, token: { S: 't1' } } })).toBe(
      dynamodb('PutItem', { Item: { id: { S: 'a' }, token: { S: 't2' } } }),
    );
  });

  it("names a transaction by each entry's action and key, in order", () => {
    const transaction = (first: string, second: string) =>
      dynamodb('TransactWriteItems', {
        TransactItems: [
          { Put: { TableName: 't', Item: { id: { S: first }, amount: { N: '1' } } } },
          { Update: { TableName: 't', Key: { id: { S: second } } } },
        ],
      });
    expect(transaction('record', 'account')).toBe(transaction('record', 'account'));
    expect(transaction('account', 'record')).not.toBe(transaction('record', 'account'));
  });

  it("names a batch by each table's keys", () => {
    const batch = (id: string) =>
      dynamodb('BatchWriteItem', { RequestItems: { t: [{ PutRequest: { Item: { id: { S: id } } } }] } });
    expect(batch('a')).toBe(batch('a'));
    expect(batch('a')).not.toBe(batch('b'));
    expect(dynamodb('BatchGetItem', { RequestItems: { t: { Keys: [{ id: { S: 'a' } }] } } })).not.toBe(
      dynamodb('BatchGetItem', { RequestItems: { t: { Keys: [{ id: { S: 'b' } }] } } }),
    );
  });

  it('names an SQS request by queue name (whatever the port) and dedup/group ids, never by receipt handle', () => {
    const send = (port: number, key: string) =>
      sqs('SendMessageBatch', {
        QueueUrl: `http://127.0.0.1:${port}/123456789012/events.fifo`,
        Entries: [
          { Id: '0', MessageBody: `body at ${port}`, MessageDeduplicationId: key, MessageGroupId: 'g' },
        ],
      });
    expect(send(4566, 'k1')).toBe(send(9324, 'k1'));
    expect(send(4566, 'k1')).not.toBe(send(4566, 'k2'));
    expect(sqs('DeleteMessage', { QueueUrl: 'http://x/1/q.fifo', ReceiptHandle: 'first' })).toBe(
      sqs('DeleteMessage', { QueueUrl: 'http://y/1/q.fifo', ReceiptHandle: 'second' }),
    );
    expect(sqs('SendMessage', { QueueUrl: 'http://x/1/q.fifo', MessageDeduplicationId: 'k1' })).not.toBe(
      sqs('SendMessage', { QueueUrl: 'http://x/1/dlq.fifo', MessageDeduplicationId: 'k1' }),
    );
  });
});

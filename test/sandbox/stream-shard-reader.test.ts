import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { afterAll, describe, expect, it } from 'vitest';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { ShardReader } from '../../sandbox/stream-shard-reader.js';
import { uniqueName } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

const config = localAwsConfig(emulatorEndpoint('dynamodbEndpoint'));
const dynamodb = new DynamoDBClient(config);
const streams = new DynamoDBStreamsClient(config);
afterAll(() => {
  dynamodb.destroy();
  streams.destroy();
});

/** A new table with a stream, and the reader of its one shard from TRIM_HORIZON. */
async function streamedTable(): Promise<{ table: string; reader: ShardReader }> {
  const table = uniqueName('reader');
  await dynamodb.send(
    new CreateTableCommand({
      TableName: table,
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
    }),
  );
  const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: table }));
  const streamArn = String(Table?.LatestStreamArn);
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
  const shardId = String(StreamDescription?.Shards?.[0]?.ShardId);
  return { table, reader: new ShardReader(streams, streamArn, shardId, 'TRIM_HORIZON') };
}

const put = (table: string, id: string) =>
  dynamodb.send(new PutItemCommand({ TableName: table, Item: { id: { S: id } } }));

describe('reading a shard of DynamoDB Local', () => {
  it('reads every record of a shard first read empty, while another stream has records', async () => {
    const [watched, other] = [await streamedTable(), await streamedTable()];
    await watched.reader.open();
    expect(await watched.reader.read()).toEqual([]);
    // The emulator then calls the watched shard's iterator trimmed: the reader takes a new one.
    const ids: string[] = [];
    for (let index = 0; index < 20; index++) {
      await put(other.table, `other-${index}`);
      await put(watched.table, `watched-${index}`);
    }
    for (let round = 0; round < 3; round++) {
      const records = await watched.reader.read();
      ids.push(...records.map((record) => String(record.dynamodb?.NewImage?.id?.S)));
    }
    expect(ids).toEqual(Array.from({ length: 20 }, (_, index) => `watched-${index}`));
  });
});
